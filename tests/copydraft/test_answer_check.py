"""answer_check: crafted inputs and answers (no model): corrections pass, drops and loops are flagged."""

import json
import time

import pytest

from specdraft.copydraft.answer_check import CheckConfig, check_answer, dropped_mask, most_repeated, sentences, words

SENTENCE = "She go to school every days and she like it."
PARAGRAPH = (
    "Yesterday me and my sister goes to the new library in town. It were bigger then we expected. "
    "The librarian show us the science section. We stayed their for three hour."
)


@pytest.mark.parametrize(
    ("source", "answer"),
    [
        (SENTENCE, "She goes to school every day and she likes it."),
        (SENTENCE, SENTENCE),  # no change is not a failure
        ("It were big. We go home. They was happy.", "It was big. We went home. They were happy."),
        ("Me and him was at the park.", "He and I were at the park."),  # reordered and changed words
        ("He is is good.", "He is good."),  # one repeated word removed: a correction
        (
            PARAGRAPH,
            "Yesterday my sister and I went to the new library in town. It was bigger than we expected. "
            "The librarian showed us the science section. We stayed there for three hours.",
        ),
        ("the cat", "The cat."),
    ],
)
def test_corrections_pass(source, answer):
    check = check_answer(source, answer)
    assert check.ok, check.warnings
    assert check.warnings == ()
    assert check.dropped_sentences == ()


def test_a_dropped_clause_is_flagged_with_the_share_of_words():
    # what smollm2-135m answered in the issue
    check = check_answer(SENTENCE, "She go to school every day.")
    assert not check.ok
    assert check.dropped_words == 4 and check.source_words == 10
    assert check.dropped_share == pytest.approx(0.4)
    assert check.dropped_passages == ("and she like it",)  # the clause, not "days and she like"
    assert check.warnings == (
        "the answer leaves out 4 of the 10 words of the text (40%)",
        'the answer leaves out "and she like it"',
    )
    assert check.to_dict()["dropped_words"] == 0.4


def test_a_dropped_clause_in_a_long_sentence_is_flagged_though_few_words_go():
    source = (
        "It is alleged Ms Dixon failed to refer Mrs Titcombe of an assessment when she was tell she had been unwell, "
        "on 26 October, 2008."
    )
    answer = (
        "It is alleged that Ms Dixon failed to refer Mrs Titcombe for an assessment when she was unwell "
        "on 26 October, 2008."
    )
    check = check_answer(source, answer)  # what smollm2-135m answered on the grammar-sentences set
    assert check.dropped_share < CheckConfig().max_dropped_share
    assert check.dropped_passages == ("tell she had been",)
    assert check.warnings == ('the answer leaves out "tell she had been"',)
    assert check_answer(source, answer, config=CheckConfig(max_dropped_run=5)).ok


def test_a_dropped_sentence_is_named():
    source = "It were big. We go to the market every day. They was happy."
    check = check_answer(source, "It was big. They were happy.")
    assert not check.ok
    assert check.dropped_sentences == ("We go to the market every day.",)
    assert check.dropped_passages == ()  # the sentence is told once, as a sentence
    assert check.dropped_words == 7
    assert any('leaves out 1 sentence of the text: "We go to the market every day."' in w for w in check.warnings)


def test_a_dropped_sentence_in_a_long_text_is_flagged_even_when_few_words_go():
    long_source = " ".join(f"Sentence number {i} is here." for i in range(30)) + " The cat sit on the mat."
    answer = " ".join(f"Sentence number {i} is here." for i in range(30))
    check = check_answer(long_source, answer)
    assert check.dropped_share < CheckConfig().max_dropped_share  # too few words for the share rule
    assert check.dropped_sentences == ("The cat sit on the mat.",)
    assert not check.ok


def test_a_few_dropped_words_in_a_long_text_pass():
    source = "We walked to the old town square and then we had a long lunch at the little cafe near the river."
    check = check_answer(
        source, "We walked to the old town square and had a long lunch at the little cafe near the river."
    )
    assert check.ok and check.dropped_words == 2


def test_a_loop_is_flagged():
    check = check_answer("hello world", "The original text is: " * 20, hit_token_limit=True)
    assert not check.ok
    assert check.repeated == ("the original text", 20)
    assert check.hit_token_limit
    joined = " | ".join(check.warnings)
    assert 'repeats "the original text" 20 more times than the text: it loops' in joined
    assert "cut off at the token limit" in joined
    assert "adds 78 words to the 2 of the text" in joined


def test_repetition_the_input_already_has_is_not_a_loop():
    source = " ".join(["hello"] * 400)
    assert check_answer(source, source).ok
    assert most_repeated(words(source), words(source), 3) is None
    # dropping most of it is flagged, though
    check = check_answer(source, "Hello, hello. The corrected text is: Hello, hello.")
    assert not check.ok and check.dropped_share > 0.9


def test_running_to_the_token_limit_alone_is_flagged():
    check = check_answer(SENTENCE, "She goes to school every day and she likes it", hit_token_limit=True)
    assert not check.ok
    assert check.warnings == ("the answer was cut off at the token limit instead of ending by itself",)


def test_added_text_is_flagged():
    answer = SENTENCE + " Here is the corrected text with some explanation of every change that I made for you."
    check = check_answer(SENTENCE, answer)
    assert not check.ok
    assert check.added_share > 1
    assert any(w.startswith("the answer adds 16 words to the 10 of the text") for w in check.warnings)


def test_the_thresholds_come_from_the_config():
    lenient = CheckConfig(max_dropped_share=0.5, max_dropped_run=5)
    assert check_answer(SENTENCE, "She go to school every day.", config=lenient).ok
    with pytest.raises(ValueError):
        CheckConfig(max_dropped_share=0)
    with pytest.raises(ValueError):
        CheckConfig(ngram=0)


def test_to_dict_is_json_and_stable():
    data = check_answer(SENTENCE, "She go to school every day.").to_dict()
    assert list(data) == [
        "ok",
        "warnings",
        "dropped_words",
        "dropped_word_count",
        "dropped_sentences",
        "dropped_passages",
        "added_words",
        "repeated",
        "hit_token_limit",
    ]
    assert json.loads(json.dumps(data)) == data


def test_the_alignment_counts_the_fewest_drops():
    mask = dropped_mask(words("It were big. We go home. They was happy."), words("It was big. They were happy."))
    assert sum(mask) == 3
    assert dropped_mask([], ["a"]) == [] and dropped_mask(["a", "b"], []) == [True, True]


def test_sentences_split_at_ends_and_line_breaks():
    assert sentences('He said "hi." Then left!\nNew line? yes') == ['He said "hi."', "Then left!", "New line?", "yes"]


def test_empty_and_wordless_texts():
    assert check_answer("...", "...").ok
    assert not check_answer("...", "Here is a long answer made of words the text never had at all.").ok


def test_long_texts_are_checked_quickly():
    source = " ".join(f"word{i % 700} and more" for i in range(1000))  # 3000 words
    start = time.perf_counter()
    check = check_answer(source, source.replace("and more", "and more", 999))
    assert check.ok
    assert time.perf_counter() - start < 10
