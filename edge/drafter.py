"""EdgeDrafter: the laptop's local model as a core ``Drafter`` for the remote verify server.

``propose(context, budget)`` (the server reachable) drafts one token tree (``specdraft.edge.trees``):
greedy, best-first by calibrated path probability within the budget and the server's branch limit;
sampling, the local model's own draws from its draft distribution ``q`` down the main chain, with
independent sibling draws where it is unsure, each node's ``q`` sent with the tree so that the
server accepts by speculative sampling's rejection rule (a server without that support gets argmax
drafts and sample-and-compare). With the server out of reach it proposes nothing: the target then
has the local model choose (``choose_local``).

- **trigger**: the tree is sent when the best remaining branch's cumulative draft probability falls
  below ``threshold``, or the budget is spent. **Adaptive** (LLMCad's self-adaptive fall-back,
  ``observe``): a verification that keeps the whole main chain lowers the threshold (longer drafts
  next), one that keeps less than half raises it.
- **pipeline** (``draft_ahead``, which the target calls while a verification is in flight): the local
  model keeps drafting past the end of the main chain in flight, as if it were all accepted, at most
  ``lookahead`` tokens past it. What the answer confirms (``answered``: accepted tokens + the server's
  next token equal to the main chain's) is kept, the rest thrown away.

The guesses past the emitted text (``ahead``, the main chain) carry over between steps, so a token
drafted once is never drafted again while it stays on the main chain.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from specdraft.draft import Draft
from specdraft.generator import GenerationConfig

from .config import EdgeClientConfig
from .guesses import Guess, LocalGuesser
from .link import EdgeLink
from .stats import EdgeStats
from .trees import Calibration, Proposal, greedy_tree, sampled_tree


class EdgeDrafter:
    """One generation's drafter (``Drafter`` protocol) on ``guesser``, for the server behind ``link``."""

    def __init__(
        self,
        guesser: LocalGuesser,
        link: EdgeLink,
        config: EdgeClientConfig,
        generation: GenerationConfig,
        calibration: Calibration,
        stats: EdgeStats,
    ) -> None:
        self.guesser, self.link, self.config, self.generation = guesser, link, config, generation
        self.calibration, self.stats = calibration, stats
        self.threshold = config.threshold
        self.context: list[int] = []  # what the guesses in ``ahead`` continue
        self.ahead: list[Guess] = []  # the local model's guesses past ``context`` (the main chain)
        self._prompt_len: int | None = None
        self._proposal: Proposal | None = None  # proposed, not yet sent
        self._answered_main: int | None = None  # main-chain nodes of the last answered verification
        self._flight = 0  # verifications sent (the pipeline marks what it drafts with this number)
        self._flight_main = 0  # main-chain nodes of the one in flight
        self._flight_drafted = 0  # tokens drafted while it was in flight
        self._emitted_from: dict[int, int] = {}  # flight -> its in-flight guesses emitted verified

    # --- the Drafter protocol ----------------------------------------------------------------------
    def propose(self, context_ids: Sequence[int], budget: int) -> Draft:
        self._follow(context_ids)
        if self._prompt_len is None:
            self._prompt_len = len(context_ids)
        self._proposal = None
        if budget <= 0 or not self.link.poll(self.context):
            return Draft.empty()
        self._sync_sampling()
        limits = self.link.limits
        budget = min(budget, self.config.max_draft_nodes, limits.max_draft_nodes)
        threshold = self.threshold if self.config.adaptive else None
        branches = max(1, limits.max_branches)
        if self.guesser.sampling is not None:
            proposal = sampled_tree(
                self._main_guess,
                budget,
                threshold,
                self.config.alt_below,
                self.config.tree_width - 1,
                branches,
                self.guesser.seed,
            )
        else:
            proposal = greedy_tree(
                self._main_guess,
                self._side_guess,
                budget,
                threshold,
                self.config.tree_width,
                branches,
                self.calibration,
            )
        self._proposal = proposal
        return proposal.draft

    def observe(self, accepted_len: int) -> None:
        """The adaptive trigger (module docstring); only a verification the server answered counts."""
        n_main, self._answered_main = self._answered_main, None
        if n_main is None or not self.config.adaptive:
            return
        if accepted_len >= n_main:
            self.threshold = max(self.config.min_threshold, self.threshold * 0.7)
        elif 2 * accepted_len < n_main:
            self.threshold = min(self.config.max_threshold, self.threshold / 0.7)

    # --- what the target asks of the local side -----------------------------------------------------
    def sending(self, draft: Draft) -> Proposal | None:
        """``draft`` goes to the server now: the proposal it was made from (its distributions, the
        tree before repeated siblings were merged), or None when it is not this drafter's."""
        proposal, self._proposal = self._proposal, None
        if proposal is not None and proposal.draft.deterministic() != draft:
            proposal = None
        self._flight += 1
        self._flight_main = proposal.n_main if proposal is not None else 0
        self._flight_drafted = 0
        if proposal is not None:
            self.stats.side_passes += proposal.side_passes
        return proposal

    def draft_ahead(self) -> bool:
        """The pipeline: one more main-chain token past the verification in flight (False: none wanted)."""
        if not self.config.pipeline or len(self.ahead) >= self._flight_main + self.config.lookahead:
            return False
        if not self._wants_more(len(self.ahead)):
            return False
        self._extend(self._flight)
        self._flight_drafted += 1
        return True

    def answered(self, proposal: Proposal | None, path: Sequence[int], tokens: Sequence[int]) -> None:
        """The server kept ``path`` (nodes of the tree sent) and chose the next token: ``tokens`` are
        the accepted tokens and that one. Keeps the guesses it confirmed."""
        self._answered_main = proposal.n_main if proposal is not None else 0
        if proposal is not None:
            self.calibration.observe(proposal, path)
        self.stats.overlap_drafted_tokens += self._flight_drafted
        guesses = self.ahead[: len(tokens)]
        for guess, token in zip(guesses, tokens):
            if guess.token != token:
                break
            if guess.in_flight:  # drafted while an earlier verification was in flight, now verified
                self.stats.overlap_emitted_tokens += 1
                self._emitted_from[guess.in_flight] = self._emitted_from.get(guess.in_flight, 0) + 1
        self._advance(list(tokens), [g.token for g in guesses] == list(tokens))
        if self._flight_drafted:  # what this flight drafted and its answer confirmed: emitted or still ahead
            kept = self._emitted_from.pop(self._flight, 0) + sum(1 for g in self.ahead if g.in_flight == self._flight)
            self.stats.overlap_kept_tokens += kept

    def choose_local(self, context_ids: Sequence[int]) -> int:
        """The token the local model emits after ``context_ids`` while the server is out of reach."""
        self._follow(context_ids)
        guess = self.ahead[0] if self.ahead else self.guesser.guess(self.context)
        token = self.guesser.choose(guess, self.generation.temperature, len(self.context))
        self._advance([token], bool(self.ahead) and token == self.ahead[0].token)
        return token

    def finish(self) -> None:
        """Record the local passes and the final threshold in the stats."""
        self.stats.draft_passes = self.guesser.passes
        self.stats.final_threshold = self.threshold

    # --- guesses ------------------------------------------------------------------------------------
    def _follow(self, context_ids: Sequence[int]) -> None:
        """Start from ``context_ids``; the guesses ahead stay only if they continue it."""
        if len(context_ids) != len(self.context) or list(context_ids) != self.context:
            self.context, self.ahead = list(context_ids), []

    def _advance(self, tokens: list[int], keep: bool) -> None:
        self.context += tokens
        self.ahead = self.ahead[len(tokens) :] if keep else []

    def _sync_sampling(self) -> None:
        """Draw from ``q`` where the session takes draft distributions (else guess the argmax)."""
        entries = self.link.limits.draft_probs_max_entries
        params = self.generation.sampling
        sampling = params if self.config.draft_probs and not params.greedy and entries > 0 else None
        if sampling != self.guesser.sampling:  # guesses drawn another way are of no use now
            self.guesser.sampling, self.ahead = sampling, []
        self.guesser.q_top_k = min(self.config.q_top_k, max(1, entries))

    def _extend(self, flight: int = 0) -> None:
        guess = self.guesser.guess(self.context + [g.token for g in self.ahead])
        self.ahead.append(replace(guess, in_flight=flight) if flight else guess)

    def _main_guess(self, depth: int) -> Guess:
        while len(self.ahead) <= depth:
            self._extend()
        return self.ahead[depth]

    def _side_guess(self, path: list[int]) -> Guess:
        return self.guesser.guess(self.context + path)

    def _wants_more(self, drafted: int) -> bool:
        """Whether a token at draft depth ``drafted`` could still be emitted (max_new_tokens)."""
        generated = len(self.context) - (self._prompt_len or len(self.context))
        return generated + drafted + 1 < self.generation.max_new_tokens
