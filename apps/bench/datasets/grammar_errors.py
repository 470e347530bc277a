"""Seeded injection of realistic learner errors into clean English text.

Each injector writes one error of its type into a tokenized text; ``inject_errors`` combines them.
Everything is a pure function of its arguments and the ``random.Random`` it is given, so a seed
fixes every error.

Words used below:

* **token**: a whitespace-separated piece of a text, punctuation attached (``"dog."``). A text is
  its tokens joined by single spaces: whitespace is collapsed when sentences are extracted.
* **core**: the letters of a token between its leading and trailing punctuation (``dog`` in
  ``"dog."``); tokens whose middle is not all ASCII letters (``dog's``, ``2016``, ``e-mail``) have
  no core and are never changed.
* **injection**: one error, ``tokens[start:end]`` replaced by ``new`` (``start == end`` inserts).
* **injector**: a pure function ``(tokens, rng, taken) -> Injection | None`` for one error type.
  It lists every place where its error applies, drops those touching a token index in ``taken``,
  and picks one with ``rng``; ``None`` when there is none. The case of a replaced word is kept
  (``Is`` -> ``Are``).

Error types (the names in ``GrammarItem.errors``), one injector each:

* ``agreement``: is/are, was/were, has/have, does/do swapped; a 3rd-person ``-s`` dropped from a
  common verb (``says`` -> ``say``), or added after I/we/you/they (``they say`` -> ``they says``).
* ``article``: ``the``/``a``/``an`` dropped, ``a`` <-> ``an``, or a superfluous ``the`` inserted
  after a preposition (``for people`` -> ``for the people``).
* ``tense``: an irregular past replaced by its present (``went`` -> ``go``), or a regular past by
  its base form (``walked`` -> ``walk``, ``decided`` -> ``decide``).
* ``spelling``: a common misspelling from a table (``receive`` -> ``recieve``) when the text has
  such a word, else a typo in a lowercase word of 5+ letters: two adjacent letters swapped, a letter
  doubled or a letter dropped (never the first letter, nor a dropped last one).
* ``preposition``: in/on/at/to/for/of confused (``to`` only before a determiner or a capital, so
  that an infinitive ``to`` stays).
* ``punctuation``: a comma dropped (``However, the`` -> ``However the``).

``inject_errors`` places errors on tokens at least one apart, so that every error is a separate
edit, and draws each error's type uniformly from the types that still apply.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import AbstractSet, Callable, Iterable, Sequence

__all__ = [
    "Injection",
    "Injector",
    "apply_injections",
    "agreement",
    "article",
    "tense",
    "COMMON_MISSPELLINGS",
    "TYPO_MIN_LETTERS",
    "typos",
    "spelling",
    "preposition",
    "punctuation",
    "INJECTORS",
    "inject_errors",
]


@dataclass(frozen=True)
class Injection:
    """One error: ``tokens[start:end]`` becomes ``new``; ``start == end`` inserts before ``start``."""

    start: int
    end: int
    new: tuple[str, ...]
    error: str

    @property
    def touched(self) -> range:
        """Token indices this injection changes (an insertion counts as touching the next token)."""
        return range(self.start, max(self.end, self.start + 1))


Injector = Callable[[Sequence[str], random.Random, AbstractSet[int]], Injection | None]


def apply_injections(tokens: Sequence[str], injections: Iterable[Injection]) -> list[str]:
    """``tokens`` with non-overlapping ``injections`` applied (indices refer to ``tokens``)."""
    out = list(tokens)
    for injection in sorted(injections, key=lambda i: i.start, reverse=True):
        out[injection.start : injection.end] = injection.new
    return out


def _pick(rng: random.Random, candidates: list[Injection], taken: AbstractSet[int]) -> Injection | None:
    free = [c for c in candidates if not any(i in taken for i in c.touched)]
    return rng.choice(free) if free else None


_TOKEN_RE = re.compile(r"""^(["'(\[]*)([A-Za-z]+)([.,;:!?"')\]]*)$""")


def _split(token: str) -> tuple[str, str, str] | None:
    """``(prefix, core, suffix)``, or ``None`` when the token has no all-letter core."""
    match = _TOKEN_RE.match(token)
    return match.groups() if match else None


def _core(token: str) -> str | None:
    """The lowercased core of ``token``, or ``None``."""
    parts = _split(token)
    return parts[1].lower() if parts else None


def _bare(token: str) -> str | None:
    """The lowercased token when it is all letters (no attached punctuation), else ``None``."""
    return token.lower() if token.isalpha() and token.isascii() else None


def _match_case(new: str, old: str) -> str:
    if len(old) > 1 and old.isupper():
        return new.upper()
    if old[:1].isupper():
        return new[:1].upper() + new[1:]
    return new


def _recore(token: str, new_core: str) -> str:
    """``token`` with its core replaced by ``new_core`` in the old core's case."""
    prefix, core, suffix = _split(token)
    return prefix + _match_case(new_core, core) + suffix


def _replacements(tokens: Sequence[str], table: dict[str, str], error: str) -> list[Injection]:
    """Every token whose core is a key of ``table``, with the core replaced by its value."""
    out = []
    for i, token in enumerate(tokens):
        new = table.get(_core(token) or "")
        if new is not None:
            out.append(Injection(i, i + 1, (_recore(token, new),), error))
    return out


# --------------------------------------------------------------------------------------------
# agreement

_AGREEMENT_SWAPS = {
    "is": "are", "are": "is", "was": "were", "were": "was",
    "has": "have", "have": "has", "does": "do", "do": "does",
}  # fmt: skip
# Verbs whose -s form is rarely also a plural noun, so dropping the -s is an agreement error.
_THIRD_PERSON = {
    "says": "say", "makes": "make", "takes": "take", "goes": "go", "comes": "come", "gives": "give",
    "wants": "want", "seems": "seem", "knows": "know", "thinks": "think", "gets": "get",
    "believes": "believe", "includes": "include", "becomes": "become", "tells": "tell",
    "feels": "feel", "tries": "try", "lets": "let", "puts": "put", "brings": "bring",
    "allows": "allow", "requires": "require", "provides": "provide", "continues": "continue",
    "appears": "appear", "depends": "depend", "happens": "happen", "belongs": "belong",
    "contains": "contain", "suggests": "suggest", "explains": "explain", "keeps": "keep",
    "begins": "begin",
}  # fmt: skip
_BASE_TO_THIRD_PERSON = {base: s_form for s_form, base in _THIRD_PERSON.items()}
_PLURAL_SUBJECTS = frozenset({"i", "we", "you", "they"})


def agreement(tokens: Sequence[str], rng: random.Random, taken: AbstractSet[int] = frozenset()) -> Injection | None:
    """Subject-verb agreement: is/are, was/were, has/have, does/do swapped, or a 3rd-person -s
    dropped (``says`` -> ``say``) or added after I/we/you/they (``they say`` -> ``they says``)."""
    candidates = _replacements(tokens, _AGREEMENT_SWAPS, "agreement")
    candidates += _replacements(tokens, _THIRD_PERSON, "agreement")
    for i in range(1, len(tokens)):
        s_form = _BASE_TO_THIRD_PERSON.get(_core(tokens[i]) or "")
        if s_form is not None and _bare(tokens[i - 1]) in _PLURAL_SUBJECTS:
            candidates.append(Injection(i, i + 1, (_recore(tokens[i], s_form),), "agreement"))
    return _pick(rng, candidates, taken)


# --------------------------------------------------------------------------------------------
# article

_ARTICLES = frozenset({"the", "a", "an"})
_ARTICLE_SWAPS = {"a": "an", "an": "a"}
_PREPOSITIONS_BEFORE_NOUNS = frozenset({"in", "on", "at", "for", "of", "with", "from", "by", "about"})
# Words that cannot follow an inserted "the" (determiners, pronouns, numbers, conjunctions, ...).
_NOT_AFTER_THE = frozenset(
    """the a an this that these those his her its their our my your some any many much each every
    all both no either neither which what whom who whose how when where why whether one two three
    four five six seven eight nine ten more most less least such other another own same than not
    only just also very too so as if it he she they we you me him us them there here then being
    been be is are was were has have had do does did will would can could may might must shall
    should up out about over into after before during between through against without within
    under while because and or but nor yet""".split()
)


def article(tokens: Sequence[str], rng: random.Random, taken: AbstractSet[int] = frozenset()) -> Injection | None:
    """Articles: ``the``/``a``/``an`` dropped (a capitalised one passes its capital on), ``a`` <->
    ``an`` swapped, or a superfluous ``the`` inserted between a preposition and a lowercase word."""
    candidates = []
    for i, token in enumerate(tokens[:-1]):  # a last-token article is not an article
        word, following = _bare(token), tokens[i + 1]
        if word in _ARTICLES:
            if token[0].isupper() and following[:1].islower():
                candidates.append(Injection(i, i + 2, (following[0].upper() + following[1:],), "article"))
            else:
                candidates.append(Injection(i, i + 1, (), "article"))
        if word in _ARTICLE_SWAPS:
            candidates.append(Injection(i, i + 1, (_match_case(_ARTICLE_SWAPS[word], token),), "article"))
        noun = _bare(following)
        if (
            word in _PREPOSITIONS_BEFORE_NOUNS
            and noun is not None
            and following.islower()
            and len(noun) >= 3
            and noun not in _NOT_AFTER_THE
        ):
            candidates.append(Injection(i + 1, i + 1, ("the",), "article"))
    return _pick(rng, candidates, taken)


# --------------------------------------------------------------------------------------------
# tense

_IRREGULAR_PAST = {
    "went": "go", "saw": "see", "took": "take", "made": "make", "came": "come", "gave": "give",
    "found": "find", "told": "tell", "thought": "think", "knew": "know", "got": "get", "said": "say",
    "became": "become", "began": "begin", "brought": "bring", "bought": "buy", "kept": "keep",
    "held": "hold", "stood": "stand", "wrote": "write", "ran": "run", "met": "meet", "sent": "send",
    "built": "build", "spent": "spend", "lost": "lose", "won": "win", "paid": "pay", "led": "lead",
    "grew": "grow", "fell": "fall", "chose": "choose", "spoke": "speak", "ate": "eat",
    "drove": "drive", "broke": "break", "sold": "sell", "taught": "teach", "caught": "catch",
    "fought": "fight", "sat": "sit", "heard": "hear", "understood": "understand", "threw": "throw",
    "flew": "fly", "drew": "draw", "wore": "wear", "forgot": "forget", "shook": "shake",
    "rode": "ride", "sang": "sing", "swam": "swim", "struck": "strike",
}  # fmt: skip
# Regular verbs whose past does not double a consonant; the table maps each past to its base.
_REGULAR_VERBS = """want need start help work look ask call report add expect happen remain return
    turn walk talk open play stay pass claim follow join kill launch offer reach record visit warn
    attack accept appear arrest award contain design develop enjoy fail form finish kick land mention
    miss perform point prevent protect push reject seem sign suffer support train watch vote decide
    use announce receive move change continue believe produce arrive charge close create die hope
    include increase live like name place release replace serve score injure raise agree describe
    involve improve introduce force face cause hire complete confirm consider discover explain explore
    fill fix gain handle jump learn listen manage mark order own pick pull remember rescue share show
    shout suggest treat try carry marry study worry apply reply deny cry hurry""".split()


def _regular_past(base: str) -> str:
    if base.endswith("e"):
        return base + "d"
    if base.endswith("y") and base[-2] not in "aeiou":
        return base[:-1] + "ied"
    return base + "ed"


_REGULAR_PAST = {_regular_past(base): base for base in _REGULAR_VERBS}


def tense(tokens: Sequence[str], rng: random.Random, taken: AbstractSet[int] = frozenset()) -> Injection | None:
    """Tense: an irregular past becomes its present (``went`` -> ``go``), or a regular past loses its
    ending (``walked`` -> ``walk``, ``decided`` -> ``decide``, ``tried`` -> ``try``)."""
    candidates = _replacements(tokens, _IRREGULAR_PAST, "tense") + _replacements(tokens, _REGULAR_PAST, "tense")
    return _pick(rng, candidates, taken)


# --------------------------------------------------------------------------------------------
# spelling

COMMON_MISSPELLINGS = {
    "receive": "recieve", "received": "recieved", "definitely": "definately", "separate": "seperate",
    "occurred": "occured", "government": "goverment", "environment": "enviroment",
    "believe": "beleive", "believed": "beleived", "achieve": "acheive", "necessary": "neccessary",
    "accommodation": "accomodation", "until": "untill", "beginning": "begining",
    "business": "buisness", "different": "diffrent", "tomorrow": "tommorow", "which": "wich",
    "because": "becuase", "their": "thier", "friend": "freind", "friends": "freinds",
    "really": "realy", "restaurant": "restaraunt", "immediately": "immediatly",
    "successful": "succesful", "committee": "commitee", "address": "adress", "across": "accross",
    "argument": "arguement", "calendar": "calender", "february": "febuary", "foreign": "foriegn",
    "library": "libary", "recommend": "reccomend", "weird": "wierd", "truly": "truely",
    "publicly": "publically", "occasion": "occassion", "experience": "experiance",
    "independent": "independant", "existence": "existance", "management": "managment",
    "official": "offical", "people": "poeple", "interest": "intrest", "similar": "similiar",
    "finally": "finaly", "especially": "especialy", "usually": "usualy", "actually": "actualy",
    "knowledge": "knowlege", "already": "allready", "against": "agianst", "piece": "peice",
    "field": "feild", "height": "heigth", "surprise": "suprise", "parliament": "parliment",
    "category": "catagory", "maintenance": "maintainance", "guarantee": "garantee",
    "conscious": "concious", "sentence": "sentance", "written": "writen", "writing": "writting",
    "coming": "comming", "relevant": "relevent", "permanent": "permanant", "apparent": "apparant",
    "appearance": "appearence", "occurrence": "occurence", "referred": "refered",
    "opportunity": "oppurtunity", "professional": "proffesional", "beautiful": "beatiful",
    "lose": "loose", "its": "it's",
}  # fmt: skip
TYPO_MIN_LETTERS = 5


def typos(word: str) -> list[str]:
    """Every one-step typo of ``word``, in a fixed order: two adjacent letters swapped, a letter
    doubled, a letter dropped. The first letter is never changed and the last never dropped (which
    would often make another word: ``heels`` -> ``heel``); ``word`` itself is excluded."""
    swaps = [word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(1, len(word) - 1)]
    doubles = [word[: i + 1] + word[i:] for i in range(1, len(word))]
    drops = [word[:i] + word[i + 1 :] for i in range(1, len(word) - 1)]
    return [t for t in dict.fromkeys(swaps + doubles + drops) if t != word]


def spelling(tokens: Sequence[str], rng: random.Random, taken: AbstractSet[int] = frozenset()) -> Injection | None:
    """Spelling: a word of ``COMMON_MISSPELLINGS`` misspelt when the text has one; otherwise a
    ``typos`` variant of an all-lowercase core of ``TYPO_MIN_LETTERS``+ letters."""
    common = _pick(rng, _replacements(tokens, COMMON_MISSPELLINGS, "spelling"), taken)
    if common is not None:
        return common
    words = []
    for i, token in enumerate(tokens):
        core = (_split(token) or ("", "", ""))[1]
        if i not in taken and core.islower() and len(core) >= TYPO_MIN_LETTERS:
            words.append(i)
    if not words:
        return None
    i = rng.choice(words)
    return Injection(i, i + 1, (_recore(tokens[i], rng.choice(typos(_core(tokens[i])))),), "spelling")


# --------------------------------------------------------------------------------------------
# preposition

_PREPOSITION_CONFUSIONS = {
    "in": ("on", "at"), "on": ("in", "at"), "at": ("in", "on"),
    "to": ("for", "at"), "for": ("to", "of"), "of": ("for", "in"),
}  # fmt: skip
_DETERMINERS = frozenset("the a an this that these those his her its their our my your".split())


def preposition(tokens: Sequence[str], rng: random.Random, taken: AbstractSet[int] = frozenset()) -> Injection | None:
    """Prepositions: in/on/at/to/for/of replaced by a commonly confused one. ``to`` counts only
    before a determiner or a capitalised word, so that an infinitive ``to`` is left alone."""
    candidates = []
    for i, token in enumerate(tokens[:-1]):  # a preposition is followed by its object
        word = _bare(token)
        if word not in _PREPOSITION_CONFUSIONS:
            continue
        following = tokens[i + 1]
        if word == "to" and _core(following) not in _DETERMINERS and not following[:1].isupper():
            continue
        for new in _PREPOSITION_CONFUSIONS[word]:
            candidates.append(Injection(i, i + 1, (_match_case(new, token),), "preposition"))
    return _pick(rng, candidates, taken)


# --------------------------------------------------------------------------------------------
# punctuation


def punctuation(tokens: Sequence[str], rng: random.Random, taken: AbstractSet[int] = frozenset()) -> Injection | None:
    """Punctuation: the comma after a word dropped (``However, the`` -> ``However the``)."""
    candidates = [
        Injection(i, i + 1, (token[:-1],), "punctuation")
        for i, token in enumerate(tokens[:-1])
        if token.endswith(",") and token[:-1].strip(",")
    ]
    return _pick(rng, candidates, taken)


INJECTORS: dict[str, Injector] = {
    "agreement": agreement,
    "article": article,
    "tense": tense,
    "spelling": spelling,
    "preposition": preposition,
    "punctuation": punctuation,
}


def _any_error(tokens: Sequence[str], rng: random.Random, taken: AbstractSet[int]) -> Injection | None:
    """An injection of the first type, in an order drawn with ``rng``, that still applies."""
    kinds = list(INJECTORS)
    rng.shuffle(kinds)
    for kind in kinds:
        injection = INJECTORS[kind](tokens, rng, taken)
        if injection is not None:
            return injection
    return None


def inject_errors(text: str, count: int, rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """``text`` with up to ``count`` errors, and their types in text order.

    Each error's type is drawn uniformly from the ``INJECTORS`` that still apply; an injection never
    touches a token next to an earlier one. Fewer than ``count`` errors when nothing applies any more.
    """
    tokens = text.split()
    taken: set[int] = set()
    chosen: list[Injection] = []
    for _ in range(count):
        injection = _any_error(tokens, rng, taken)
        if injection is None:
            break
        chosen.append(injection)
        taken.update(range(injection.touched.start - 1, injection.touched.stop + 1))
    chosen.sort(key=lambda i: i.start)
    return " ".join(apply_injections(tokens, chosen)), tuple(i.error for i in chosen)
