"""EdgeClient: a laptop drafts token trees with a small local model, the server verifies them, and
the laptop keeps writing when the server is gone.

Online (a session open on ``specdraft serve --edge``):

- **draft**: a token tree (``tree``). Greedy: best-first by path probability over the local model's
  ``tree_width`` likeliest children per node, within the node budget and the server's branch limit
  (the better alternative to LLMCad's max-min budget split, see ``tree``). Sampling: the local
  model's own draws from its draft distribution ``q`` down the main chain, with independent sibling
  draws where it is unsure; each node's ``q`` (a short (token, probability) list) goes with the tree
  and the server accepts by speculative sampling's rejection rule (exact: ``q`` is what was drawn
  from, see ``local_drafter``). A server without that support gets argmax drafts and
  sample-and-compare.
- **trigger**: the tree is sent when the best remaining branch's cumulative draft probability falls
  below ``threshold``, or the budget is spent. **Adaptive** (LLMCad's self-adaptive fall-back): a
  verification that keeps the whole main chain lowers the threshold (longer drafts next), one that
  keeps less than half raises it.
- **pipeline**: the verification runs in a worker thread (one HTTP round trip, the server follows
  its own choices and commits); meanwhile the local model keeps drafting past the end of the main
  chain in flight, as if it were all accepted. What the answer confirms (accepted tokens + the
  server's next token equal to the main chain's) is kept, the rest thrown away. Measured, not
  simulated: ``overlap_s`` (seconds drafted while a verification was in flight), ``in_flight_s``,
  ``overlap_drafted_tokens`` (tokens drafted then), ``overlap_kept_tokens`` (of those, the ones on a
  branch the answer confirmed) and ``overlap_emitted_tokens`` (the ones that became verified output).

Every emitted token online is the server's choice or accepted by the server's lossless rule, so
greedy output equals the server model's greedy output, and sampling keeps its distribution
(seeded sample-and-compare repeats the server's own sampling exactly).

Offline (timeout, connection refused, 5xx, or a session the server no longer has): the client does
not stop. It generates on the local model, emits those tokens flagged unverified (``TextPiece``
source "unverified", ``EdgeResult.verified``, ``stats["unverified_tokens"]``), and retries in the
background with exponential back-off by opening a new session from the whole context shown so far;
tokens generated while that call was on its way are appended, and verification resumes from there.
Nothing already emitted is taken back or rewritten.
"""

from __future__ import annotations

import secrets
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, Iterator, Sequence

from specdraft.generator import GenerationConfig
from specdraft.text_stream import TextAssembler, TextPiece

from .local_drafter import Guess, LocalDrafter
from .tree import Calibration, Tree, greedy_tree, sampled_tree
from .transport import EdgeConnection, EdgeRefused, ServerUnavailable

VERIFIED, UNVERIFIED = "verified", "unverified"


@dataclass(frozen=True)
class EdgeClientConfig:
    """``max_draft_nodes``: nodes per verification (capped by the server's limit); ``threshold``: the
    initial confidence below which drafting stops (``adaptive``: moved by acceptance within
    [``min_threshold``, ``max_threshold``]; not adaptive: drafts always fill ``max_draft_nodes``);
    ``tree_width``: children considered per node of a greedy tree (1: a chain), and 1 + the most
    sibling draws per level of a sampled tree; ``alt_below``: a sampled level gets siblings where
    the draft's top probability is below this; ``draft_probs``: under sampling, send the draft
    distributions (``q_top_k`` tokens wide) for the rejection rule (False: sample-and-compare);
    ``pipeline``: keep drafting while a verification is in flight, at most ``lookahead`` tokens past
    it; ``retry_initial_s``/``retry_max_s``: back-off between attempts to reach a lost server."""

    max_draft_nodes: int = 16
    threshold: float = 0.3
    adaptive: bool = True
    min_threshold: float = 0.02
    max_threshold: float = 0.9
    tree_width: int = 3
    alt_below: float = 0.5
    draft_probs: bool = True
    q_top_k: int = 16
    pipeline: bool = True
    lookahead: int = 16
    retry_initial_s: float = 0.25
    retry_max_s: float = 4.0

    def __post_init__(self) -> None:
        if self.max_draft_nodes < 1 or self.lookahead < 0 or self.tree_width < 1 or self.q_top_k < 1:
            raise ValueError("max_draft_nodes, tree_width and q_top_k must be >= 1 and lookahead >= 0")
        if not 0 < self.min_threshold <= self.threshold <= self.max_threshold < 1:
            raise ValueError("need 0 < min_threshold <= threshold <= max_threshold < 1")
        if not 0 < self.retry_initial_s <= self.retry_max_s:
            raise ValueError("need 0 < retry_initial_s <= retry_max_s")


@dataclass
class EdgeResult:
    text: str
    token_ids: list[int]
    prompt_token_ids: list[int]
    verified: list[bool]  # per token of token_ids: confirmed by the server (False: the local model's alone)
    finish_reason: str
    stats: dict[str, Any]
    pieces: list[TextPiece] = field(default_factory=list)


class EdgeClient:
    def __init__(self, connection: EdgeConnection, draft_model: Any, config: EdgeClientConfig = EdgeClientConfig()) -> None:
        self.connection = connection
        self.draft_model = draft_model
        self.config = config
        self.calibration = Calibration()  # learnt across this client's runs (tree shapes only, never the text)

    def generate(self, prompt_ids: Sequence[int], generation: GenerationConfig = GenerationConfig()) -> EdgeResult:
        run = _Run(self, list(prompt_ids), generation)
        for _ in run.steps():
            pass
        return run.result()

    def stream(self, prompt_ids: Sequence[int], generation: GenerationConfig = GenerationConfig()) -> "_Run":
        """Iterate ``.steps()`` for ``TextPiece``s as they become final; ``.result()`` afterwards."""
        return _Run(self, list(prompt_ids), generation)


class _Run:
    """One generation's state (see the module docstring for the protocol it follows)."""

    def __init__(self, client: EdgeClient, prompt: list[int], generation: GenerationConfig) -> None:
        if not prompt:
            raise ValueError("the prompt must hold at least one token")
        self.client, self.config, self.generation = client, client.config, generation
        self.conn = client.connection
        self.prompt = prompt
        self.seed = generation.seed if generation.seed is not None else secrets.randbits(62)
        self.drafter = LocalDrafter(client.draft_model, self.seed, None, client.config.q_top_k)
        self.tokenizer = client.draft_model.tokenizer
        self.assembler = TextAssembler(self.tokenizer, generation.stop)
        self.eos = frozenset() if generation.ignore_eos else frozenset(client.draft_model.eos_token_ids)
        self.out: list[int] = []
        self.flags: list[bool] = []
        self.pieces: list[TextPiece] = []
        self.ahead: list[Guess] = []  # the local model's guesses past ``out`` (the main chain)
        self.threshold = self.config.threshold
        self.session: str | None = None
        self.server_len = 0
        self.limits = {"max_draft_nodes": self.config.max_draft_nodes, "max_branches": 1, "max_length": 1 << 30}
        self.passes_closed = 0  # server passes of sessions given up
        self.passes = 0
        self.finish_reason = "length"
        self.done = False
        self.stats = {"round_trips": 0, "verify_steps": 0, "drafted_tokens": 0, "accepted_tokens": 0,
                      "verified_tokens": 0, "unverified_tokens": 0, "reconnects": 0, "server_losses": 0,
                      "side_passes": 0, "sampled_verifications": 0, "overlap_s": 0.0, "in_flight_s": 0.0,
                      "overlap_drafted_tokens": 0, "overlap_kept_tokens": 0, "overlap_emitted_tokens": 0}
        self.flight = 0  # verifications sent so far (the pipeline marks what it drafts with this number)
        self._emitted_from: dict[int, int] = {}  # flight -> its in-flight guesses emitted verified
        self.retry_at, self.backoff = 0.0, self.config.retry_initial_s  # offline: when to try the server next
        self._reconnect: Future | None = None  # a session being opened in the worker
        self._reconnect_from = 0  # len(out) when it was asked for
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edge-verify")
        self.started = time.perf_counter()

    # --- server calls (run in the worker thread or, when nothing is in flight, here) -----------------
    def _open(self, context: list[int]) -> dict:
        params = self.generation.sampling
        answer = self.conn.request("POST", "/v1/edge/sessions", {
            "prompt": context, "tokenizer": self.tokenizer.fingerprint(), "temperature": params.temperature,
            "top_p": params.top_p, "top_k": params.top_k, "seed": self.seed})
        return answer

    def _adopt(self, answer: dict) -> None:
        self.session, self.server_len, self.passes = answer["id"], answer["context_length"], answer["forward_passes"]
        self.limits = {k: answer[k] for k in ("max_draft_nodes", "max_branches", "max_length")}
        self.stats["round_trips"] += 1
        entries = int(answer.get("draft_probs_max_entries", 0))  # 0: a server that only compares tokens
        params = self.generation.sampling
        sampling = params if self.config.draft_probs and not params.greedy and entries > 0 else None
        if sampling != self.drafter.sampling:  # guesses drawn another way are of no use now
            self.drafter.sampling, self.ahead = sampling, []
        self.drafter.q_top_k = min(self.config.q_top_k, max(1, entries))

    def _verify(self, tree: Tree, session: str, length: int) -> tuple[dict, float]:
        answer = self.conn.request("POST", f"/v1/edge/sessions/{session}/verify", {**tree.wire(), "context_length": length})
        return answer, time.perf_counter()

    def _lose_server(self) -> None:
        if self.session is not None:
            self.stats["server_losses"] += 1
            self.passes_closed += self.passes
            self.passes, self.session = 0, None
        self.retry_at, self.backoff = time.monotonic(), self.config.retry_initial_s

    # --- the loop --------------------------------------------------------------------------------
    def steps(self) -> Iterator[TextPiece]:
        try:
            try:
                self._adopt(self._open(self.prompt))
            except (ServerUnavailable, EdgeRefused) as error:
                if isinstance(error, EdgeRefused) and error.status in (401, 403, 409, 400):
                    raise  # a wrong key, another tokenizer, a bad prompt: no point generating
                self._lose_server()
            while not self.done:
                if self.session is not None:
                    yield from self._online_step()
                else:
                    yield from self._offline_step()
            yield from self._emit_pieces(self.assembler.finish())
        finally:
            self._shutdown()

    def _online_step(self) -> Iterator[TextPiece]:
        tree = self._next_draft()
        n_main = tree.n_main
        self.flight += 1
        sent = time.perf_counter()
        future: Future = self.pool.submit(self._verify, tree, self.session, self.server_len)
        # the pipeline: keep drafting past the draft in flight while the server works
        drafted = 0
        while not future.done() and self.config.pipeline and len(self.ahead) < n_main + self.config.lookahead and self._wants_more(len(self.ahead)):
            self._extend(self.flight)
            drafted += 1
        drafting_ended = time.perf_counter()
        try:
            answer, answered = future.result()
        except ServerUnavailable:
            self._lose_server()
            return
        except EdgeRefused as error:
            if error.status not in (404, 409):
                raise
            self._lose_server()  # the server forgot the session (restarted, idle timeout): reopen now
            return
        self.stats["round_trips"] += 1
        self.stats["verify_steps"] += 1
        self.stats["drafted_tokens"] += len(tree)
        self.stats["side_passes"] += tree.side_passes
        self.stats["sampled_verifications"] += bool(tree.qs)
        self.stats["in_flight_s"] += answered - sent
        if drafted:
            self.stats["overlap_s"] += min(drafting_ended, answered) - sent
            self.stats["overlap_drafted_tokens"] += drafted
        accepted = [int(t) for t in answer["accepted_tokens"]]
        self.client.calibration.observe(tree, [int(n) for n in answer["accepted_path"]])
        self.stats["accepted_tokens"] += len(accepted)
        self.server_len, self.passes = answer["context_length"], answer["forward_passes"]
        if self.config.adaptive:
            if len(accepted) >= n_main:
                self.threshold = max(self.config.min_threshold, self.threshold * 0.7)
            elif 2 * len(accepted) < n_main:
                self.threshold = min(self.config.max_threshold, self.threshold / 0.7)
        yield from self._emit(accepted + [int(answer["next_token"])], True)
        if drafted:  # what this flight drafted and its answer confirmed: emitted now or still ahead
            kept = self._emitted_from.pop(self.flight, 0) + sum(1 for g in self.ahead if g.in_flight == self.flight)
            self.stats["overlap_kept_tokens"] += kept

    def _offline_step(self) -> Iterator[TextPiece]:
        now = time.monotonic()
        reconnect = self._reconnect
        if reconnect is None and now >= self.retry_at:
            self._reconnect_from = len(self.out)
            self._reconnect = reconnect = self.pool.submit(self._open, self.prompt + self.out)
        if reconnect is not None and reconnect.done():
            self._reconnect = None
            try:
                self._adopt(reconnect.result())
                extra = self.out[self._reconnect_from:]  # shown while the session was being opened
                if extra:
                    answer = self.conn.request("POST", f"/v1/edge/sessions/{self.session}/append",
                                               {"tokens": extra, "context_length": self.server_len})
                    self.stats["round_trips"] += 1
                    self.server_len, self.passes = answer["context_length"], answer["forward_passes"]
                self.stats["reconnects"] += 1
                return
            except (ServerUnavailable, EdgeRefused):
                self.session = None
                self.backoff = min(self.config.retry_max_s, self.backoff * 2)
                self.retry_at = time.monotonic() + self.backoff
        guess = self.ahead[0] if self.ahead else self.drafter.next(self.prompt + self.out)
        token = self.drafter.choose(guess, self.generation.temperature, len(self.prompt) + len(self.out))
        self.ahead = self.ahead[1:] if self.ahead and token == self.ahead[0].token else []
        yield from self._emit([token], False)

    # --- drafting --------------------------------------------------------------------------------
    def _extend(self, flight: int = 0) -> None:
        guess = self.drafter.next(self.prompt + self.out + [g.token for g in self.ahead])
        self.ahead.append(replace(guess, in_flight=flight) if flight else guess)

    def _main_guess(self, depth: int) -> Guess:
        while len(self.ahead) <= depth:
            self._extend()
        return self.ahead[depth]

    def _side_guess(self, path: list[int]) -> Guess:
        return self.drafter.next(self.prompt + self.out + path)

    def _wants_more(self, drafted: int) -> bool:
        """Whether a token at draft depth ``drafted`` could still be emitted (max_new_tokens)."""
        return len(self.out) + drafted + 1 < self.generation.max_new_tokens

    def _next_draft(self) -> Tree:
        """The next verification's tree (see ``tree``): greedy best-first, or sampled from ``q``."""
        room = self.limits["max_length"] - self.server_len - 1
        budget = max(0, min(self.config.max_draft_nodes, self.limits["max_draft_nodes"], room,
                            self.generation.max_new_tokens - len(self.out) - 1))
        threshold = self.threshold if self.config.adaptive else None
        branches = max(1, self.limits["max_branches"])
        if self.drafter.sampling is not None:
            return sampled_tree(self._main_guess, budget, threshold, self.config.alt_below, self.config.tree_width - 1,
                                branches, self.seed)
        return greedy_tree(self._main_guess, self._side_guess, budget, threshold, self.config.tree_width, branches,
                           self.client.calibration)

    # --- output ----------------------------------------------------------------------------------
    def _emit(self, tokens: list[int], verified: bool) -> Iterator[TextPiece]:
        if verified:  # keep the guesses the server confirmed
            guesses = self.ahead[: len(tokens)]
            for guess, token in zip(guesses, tokens):
                if guess.token != token:
                    break
                if guess.in_flight:  # drafted while an earlier verification was in flight, now verified
                    self.stats["overlap_emitted_tokens"] += 1
                    self._emitted_from[guess.in_flight] = self._emitted_from.get(guess.in_flight, 0) + 1
            drafted = [g.token for g in guesses]
            self.ahead = self.ahead[len(tokens):] if drafted == tokens else []
        for token in tokens:
            if self.done:
                return
            self.out.append(token)
            self.flags.append(verified)
            self.stats["verified_tokens" if verified else "unverified_tokens"] += 1
            if token in self.eos:
                self.finish_reason, self.done = "stop", True
                return
            yield from self._emit_pieces(self.assembler.push(token, VERIFIED if verified else UNVERIFIED))
            if self.assembler.stopped:
                self.finish_reason, self.done = "stop", True
            elif len(self.out) >= self.generation.max_new_tokens or len(self.prompt) + len(self.out) >= self.limits["max_length"]:
                self.done = True

    def _emit_pieces(self, pieces: list[TextPiece]) -> Iterator[TextPiece]:
        self.pieces.extend(pieces)
        yield from pieces

    def _shutdown(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            self.passes_closed += self.passes
            self.passes = 0
            self._close_quietly(session)  # after the text is complete: frees the server's cache now
        self.pool.shutdown(wait=False, cancel_futures=True)  # a reconnection still on its way ends on its own

    def _close_quietly(self, session: str) -> None:
        try:
            self.conn.request("DELETE", f"/v1/edge/sessions/{session}")
        except (ServerUnavailable, EdgeRefused):
            pass

    def result(self) -> EdgeResult:
        wall = time.perf_counter() - self.started
        stats = dict(self.stats)
        n = len(self.out)
        stats.update({
            "generated_tokens": n, "server_forward_passes": self.passes_closed + self.passes,
            "draft_passes": self.drafter.passes, "wall_s": round(wall, 4),
            "tokens_per_s": round(n / wall, 3) if wall > 0 else 0.0,
            "verified_per_round_trip": round(stats["verified_tokens"] / max(1, stats["verify_steps"]), 3),
            "server_passes_per_token": round((self.passes_closed + self.passes) / max(1, n), 4),
            "final_threshold": round(self.threshold, 4),
            "overlap_s": round(stats["overlap_s"], 4), "in_flight_s": round(stats["in_flight_s"], 4),
        })
        return EdgeResult(self.assembler.text, list(self.out), list(self.prompt), list(self.flags), self.finish_reason, stats, list(self.pieces))
