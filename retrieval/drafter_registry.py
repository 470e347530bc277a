"""The drafters by name: the one registry every surface that lets a user pick a drafter reads.

The command line (``--drafter`` of ``generate``, ``serve``, ``ask``), the service (a completion's
``drafter``, a RAG query's), the RAG pipeline and the benchmark runner all parse names here. Each
``DrafterEntry`` has one canonical name, the older names clients still send (``aliases``: a
completion's ``documents`` is ``reference``), a one-line description (``--help`` and the error
messages list it), what it drafts from (``needs``) and how a fresh drafter is built for one request.

What a drafter drafts from depends on where it runs; a surface says what it can offer:

- ``PASSAGES``: a completion's are the passages of its own prompt (``prompt_passages``: the
  documents a RAG chain put in its messages); a RAG answer's are the retrieved passages and the
  question (``RAGPipeline.references``);
- ``DATASTORE``: a REST datastore (``specdraft serve --datastore``, ``specdraft ask --datastore``);
- ``DRAFT_MODEL``: a ``ModelPool`` that loads draft models (completions, ``generate``, the bench;
  the RAG pipeline loads none).

A name is parsed once (``parse_drafter``: unknown names are a ValueError listing the names the surface
offers), checked against what the surface offers (``require``: "drafter 'datastore' needs a
datastore"), then built per request (``DrafterSpec.build`` over ``DraftInputs``). A parsed choice
remembers the alias it was spelled with, and ``str(spec)`` gives that spelling back, so a response
names the drafter as the request did.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from specdraft import Drafter, SamplingParams, Tokenizer
from specdraft.drafters import DraftModelConfig, DraftModelDrafter, PromptLookupDrafter
from specdraft.drafters.chain_of_drafters import FirstDraft
from specdraft.sampling import PositionalRandom

from .datastore import Datastore, DatastoreDraftConfig, DatastoreDrafter
from .reference_drafter import ReferenceDraftConfig, ReferenceDrafter

if TYPE_CHECKING:
    from specdraft import Model

# What a drafter may need from the surface it runs on (see the module docstring).
PASSAGES = "passages"
DATASTORE = "a datastore"
DRAFT_MODEL = "a draft model"
EVERYTHING = frozenset({PASSAGES, DATASTORE, DRAFT_MODEL})

NO_DRAFTER = "none"  # plain decoding
PROMPT_LOOKUP = "prompt-lookup"
REFERENCE = "reference"
MODEL = "model"  # spelled model:NAME
_MODEL_PREFIX = f"{MODEL}:"


@dataclass(frozen=True)
class DraftInputs:
    """What one request offers its drafter. ``tokenizer``: the target's (passages are tokenized with
    it); ``vocab_size``: the target's logits width (a draft model's distributions are over it);
    ``passages``: the texts the reference drafter copies spans from, in priority order; ``datastore``;
    ``draft_model``: the model a ``model:NAME`` choice names, loaded; ``sampling``/``seed``: the
    request's (a draft model samples with them; None: a random seed); ``reference`` and
    ``datastore_draft``: the two retrieval drafters' settings."""

    tokenizer: Tokenizer
    vocab_size: int = 0
    passages: Sequence[str] = ()
    datastore: Datastore | None = None
    draft_model: "Model | None" = None
    sampling: SamplingParams = SamplingParams()
    seed: int | None = None
    reference: ReferenceDraftConfig = ReferenceDraftConfig()
    datastore_draft: DatastoreDraftConfig = DatastoreDraftConfig()


@dataclass(frozen=True)
class DrafterEntry:
    """One drafter: ``name`` (canonical), ``aliases`` (older names, accepted everywhere),
    ``description`` (one line), ``needs`` (from ``PASSAGES``, ``DATASTORE``, ``DRAFT_MODEL``) and
    ``make(spec, inputs)``, a fresh drafter for one request (None: plain decoding)."""

    name: str
    aliases: tuple[str, ...]
    description: str
    needs: frozenset[str]
    make: Callable[["DrafterSpec", DraftInputs], Drafter | None]

    @property
    def usage(self) -> str:
        """How the name is written: ``model:NAME`` for the draft model, else the name."""
        return f"{_MODEL_PREFIX}NAME" if self.name == MODEL else self.name


def _reference(inputs: DraftInputs) -> Drafter | None:
    if not inputs.passages:
        return None
    return ReferenceDrafter([inputs.tokenizer.encode(text) for text in inputs.passages], inputs.reference)


def _datastore(inputs: DraftInputs) -> Drafter:
    if inputs.datastore is None:
        raise ValueError("the datastore drafter needs a datastore")
    return DatastoreDrafter(inputs.datastore, inputs.datastore_draft)


def _reference_then_datastore(inputs: DraftInputs) -> Drafter | None:
    drafters = [drafter for drafter in (_reference(inputs), _datastore(inputs)) if drafter is not None]
    return drafters[0] if len(drafters) == 1 else FirstDraft(drafters)


def _draft_model(spec: "DrafterSpec", inputs: DraftInputs) -> Drafter:
    if inputs.draft_model is None:
        raise ValueError(f"drafter {str(spec)!r} needs its draft model loaded")
    rng = PositionalRandom(secrets.randbits(62) if inputs.seed is None else inputs.seed)
    config = DraftModelConfig(spec.tree_width)
    return DraftModelDrafter(inputs.draft_model, inputs.vocab_size, inputs.sampling, rng, config)


REGISTRY: tuple[DrafterEntry, ...] = (
    DrafterEntry(NO_DRAFTER, (), "plain decoding (the baseline)", frozenset(), lambda spec, inputs: None),
    DrafterEntry(
        PROMPT_LOOKUP,
        (),
        "n-grams of the prompt and the answer so far",
        frozenset(),
        lambda spec, inputs: PromptLookupDrafter(),
    ),
    DrafterEntry(
        REFERENCE,
        ("documents",),
        "spans of the passages: the retrieved ones (RAG), or those in the prompt (a RAG chain's documents)",
        frozenset({PASSAGES}),
        lambda spec, inputs: _reference(inputs),
    ),
    DrafterEntry(
        "datastore",
        (),
        "continuations from a corpus datastore (REST; needs --datastore)",
        frozenset({DATASTORE}),
        lambda spec, inputs: _datastore(inputs),
    ),
    DrafterEntry(
        "reference+datastore",
        (),
        "the passages first, the datastore when they offer nothing",
        frozenset({PASSAGES, DATASTORE}),
        lambda spec, inputs: _reference_then_datastore(inputs),
    ),
    DrafterEntry(MODEL, (), "a draft model sharing the target's tokenizer", frozenset({DRAFT_MODEL}), _draft_model),
)
_BY_NAME = {name: entry for entry in REGISTRY for name in (entry.name, *entry.aliases) if entry.name != MODEL}


def offered(offers: frozenset[str] = EVERYTHING) -> tuple[DrafterEntry, ...]:
    """The entries a surface that offers ``offers`` can build, in the registry's order."""
    return tuple(entry for entry in REGISTRY if entry.needs <= offers)


def drafter_names(offers: frozenset[str] = EVERYTHING, aliases: bool = False) -> tuple[str, ...]:
    """The names a surface offering ``offers`` accepts (``model:NAME`` as written), canonical ones
    first; ``aliases`` adds the aliases after them."""
    entries = offered(offers)
    names = tuple(entry.usage for entry in entries)
    return names + tuple(alias for entry in entries for alias in entry.aliases) if aliases else names


def _listed(offers: frozenset[str]) -> str:
    """The offered names for an error message, each alias beside its name: ``reference (alias documents)``."""
    return ", ".join(entry.usage + "".join(f" (alias {a})" for a in entry.aliases) for entry in offered(offers))


def drafter_help(offers: frozenset[str] = EVERYTHING) -> str:
    """One line per offered drafter, for ``--help``: ``name (alias ...): description``."""
    lines = []
    for entry in offered(offers):
        alias = f" (alias {', '.join(entry.aliases)})" if entry.aliases else ""
        lines.append(f"{entry.usage}{alias}: {entry.description}")
    return "; ".join(lines)


@dataclass(frozen=True)
class DrafterSpec:
    """A parsed drafter choice: ``kind`` (an entry's canonical name; ``"model"`` for ``model:NAME``),
    ``model`` (the draft model's name), ``tree_width`` (a draft model's candidates per depth under
    greedy decoding) and ``alias`` (the alias it was spelled with; None: the canonical name)."""

    kind: str
    model: str | None = None
    tree_width: int = DraftModelConfig().tree_width
    alias: str | None = None

    def __str__(self) -> str:
        """The choice as it was spelled (``model:NAME``, an alias, or the canonical name)."""
        return f"{_MODEL_PREFIX}{self.model}" if self.kind == MODEL else self.alias or self.kind

    @property
    def entry(self) -> DrafterEntry:
        return next(entry for entry in REGISTRY if entry.name == self.kind)

    @property
    def needs(self) -> frozenset[str]:
        return self.entry.needs

    def build(self, inputs: DraftInputs) -> Drafter | None:
        """A fresh drafter for one request (None: plain decoding, or a passage drafter with no passages)."""
        return self.entry.make(self, inputs)


def parse_drafter(
    text: str, tree_width: int = DraftModelConfig().tree_width, offers: frozenset[str] = EVERYTHING
) -> DrafterSpec:
    """``text`` (surrounding spaces ignored) as a ``DrafterSpec``; ValueError for a name the registry
    does not know, listing the names a surface offering ``offers`` accepts. ``tree_width``: for
    ``model:NAME``. What the surface offers is checked by ``require``."""
    text = (text or "").strip()
    if text.startswith(_MODEL_PREFIX) and text[len(_MODEL_PREFIX) :].strip():
        return DrafterSpec(MODEL, text[len(_MODEL_PREFIX) :].strip(), tree_width)
    entry = _BY_NAME.get(text)
    if entry is None:
        raise ValueError(f"unknown drafter {text!r}: choose one of {_listed(offers)}")
    return DrafterSpec(entry.name, alias=text if text != entry.name else None)


def require(spec: DrafterSpec, offers: frozenset[str]) -> None:
    """ValueError unless a surface offering ``offers`` can build ``spec`` (says what is missing)."""
    missing = sorted(spec.needs - offers)
    if missing:
        raise ValueError(f"drafter {str(spec)!r} needs {' and '.join(missing)}")


def check_datastore(spec: DrafterSpec, datastore: Datastore | None, vocab_size: int | None) -> None:
    """ValueError unless ``spec`` has the datastore it needs, built with a vocabulary of ``vocab_size``
    tokens (the target tokenizer's; None: not checked)."""
    if DATASTORE not in spec.needs:
        return
    if datastore is None:
        raise ValueError(f"drafter {str(spec)!r} needs {DATASTORE}")
    if vocab_size is not None and datastore.vocab_size is not None and datastore.vocab_size != vocab_size:
        raise ValueError(
            f"the datastore was built with the tokenizer of {datastore.tokenizer or 'another model'} "
            f"({datastore.vocab_size} tokens); the target's has {vocab_size}: build one with this model's tokenizer"
        )
