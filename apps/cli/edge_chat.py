"""``specdraft edge --chat`` without a prompt: a conversation with the server's model, drafted here.

Reads one user turn per line of standard input; ``/exit`` (or ``/quit``) or the end of the input
ends it, blank lines are skipped. The whole conversation so far (an optional ``--system`` message,
then the user's and the model's turns) goes through the chat template of the local model, which
shares the served model's tokenizer and so its template, and each answer streams as it is
verified, through one ``EdgeConnection`` kept for the whole chat (a new server session per turn).

Unverified text (written by the local model while the server was unreachable) is shown distinctly:
dim on a terminal, between the plain markers ``[?`` and ``?]`` otherwise (``UNVERIFIED_OPEN``/``_CLOSE``).
Verified text is written as it is, one answer per turn followed by a newline. Each turn's counts
go to standard error (``--json``: one object per turn on standard output instead of the text).
When standard input is a terminal, a ``you> `` prompt is written to standard error before each turn.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, TextIO

DIM, RESET = "\x1b[2m", "\x1b[0m"
UNVERIFIED_OPEN, UNVERIFIED_CLOSE = "[?", "?]"
EXIT_COMMANDS = ("/exit", "/quit")


class StyledWriter:
    """Writes pieces of one answer, unverified runs dim (``tty``) or between the plain markers."""

    def __init__(self, out: TextIO, tty: bool) -> None:
        self.out, self.tty = out, tty
        self.inside = False  # within a run of unverified text

    def write(self, text: str, verified: bool) -> None:
        if not self.tty and self.inside == verified:  # the run changes: open or close the markers
            self.out.write(UNVERIFIED_CLOSE if verified else UNVERIFIED_OPEN)
            self.inside = not verified
        self.out.write(text if verified or not self.tty else f"{DIM}{text}{RESET}")
        self.out.flush()

    def end(self) -> None:
        if self.inside:
            self.out.write(UNVERIFIED_CLOSE)
            self.inside = False
        self.out.write("\n")
        self.out.flush()


def run_chat(
    args: argparse.Namespace, model: Any, config: Any, stdin: TextIO | None = None, stdout: TextIO | None = None
) -> int:
    from specdraft import GenerationConfig
    from specdraft.edge import EdgeConnection, EdgeRefused, TransportConfig
    from specdraft.edge.client import EdgeClient

    stdin, stdout = stdin or sys.stdin, stdout or sys.stdout
    if not model.has_chat_template:
        raise ValueError(
            f"the draft model {args.draft_model} has no chat template (and so neither has the server's model)"
        )
    messages: list[dict[str, str]] = [{"role": "system", "content": args.system}] if args.system else []
    generation = GenerationConfig(max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed)
    prompting = stdin.isatty()
    with EdgeConnection(args.server, args.key, TransportConfig(timeout_s=args.timeout)) as connection:
        client = EdgeClient(connection, model, config)
        while True:
            if prompting:
                print("you> ", end="", file=sys.stderr, flush=True)
            line = stdin.readline()
            if not line or line.strip() in EXIT_COMMANDS:
                return 0
            if not line.strip():
                continue
            messages.append({"role": "user", "content": line.rstrip("\n")})
            run = client.stream(model.encode_chat(messages), generation)
            writer = StyledWriter(stdout, stdout.isatty())
            try:
                for piece in run.steps():
                    if not args.json:
                        writer.write(piece.text, piece.source != "unverified")
            except EdgeRefused as error:
                raise ValueError(f"the server refused: {error.message}") from None
            result = run.result()
            messages.append({"role": "assistant", "content": result.text})
            if args.json:
                print(
                    json.dumps(
                        {
                            "text": result.text,
                            "token_ids": result.token_ids,
                            "prompt_token_ids": result.prompt_token_ids,
                            "verified": result.verified,
                            "finish_reason": result.finish_reason,
                            "stats": result.stats.to_dict(),
                        }
                    ),
                    file=stdout,
                    flush=True,
                )
            else:
                writer.end()
                stats = result.stats
                print(
                    f"[{stats.generated_tokens} tokens, {stats.round_trips} round trips, "
                    f"{stats.target_forward_passes} server passes, "
                    f"{stats.unverified_tokens} unverified]",
                    file=sys.stderr,
                    flush=True,
                )
