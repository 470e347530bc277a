"""Experiment: the iterative-rag bench with one OS^3 scheduler shared by all answers of a
(retriever, method) pair, patched in (the bench builds a pipeline per question)."""
import sys

from specdraft.apps.cli import main
from specdraft.retrieval.iterative import speculative
from specdraft.retrieval.iterative.os3 import OS3Scheduler

original = speculative.answer_speculatively
shared = {}


def patched(state, config, scheduler=None):
    key = (id(state.retriever), config)
    if key not in shared:
        shared[key] = OS3Scheduler(speculative.os3_config(config))
    return original(state, config, shared[key])


speculative.answer_speculatively = patched
sys.exit(main(sys.argv[1:]))
