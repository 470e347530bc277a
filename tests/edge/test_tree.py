"""Edge draft trees on hand-made guesses: best-first by path probability under a budget and a
branch limit, the confidence trigger, online calibration turning a twin drafter's tree into a
chain, and sampled trees whose shape is decided before their draws."""

import itertools

import pytest

from specdraft import ROOT
from specdraft.edge.guesses import Guess
from specdraft.edge.trees import Calibration, greedy_tree, main_chain_tokens, sampled_tree

# every context's guesses: token 10 + depth first, then two runners-up (probabilities by rank)
PROBS = (0.6, 0.3, 0.1)


def guess_after(path):
    base = 10 * (len(path) + 1)
    top = tuple((base + r, p) for r, p in enumerate(PROBS))
    return Guess(top[0][0], top[0][1], top[1][0], top[1][1], None, top)


def build(budget, threshold=None, width=3, max_leaves=64, calibration=lambda rank, p: p):
    main = []

    def main_guess(depth):
        while len(main) <= depth:
            main.append(guess_after([g.token for g in main]))
        return main[depth]

    sides = []

    def side(path):
        sides.append(path)
        return guess_after(path)

    return greedy_tree(main_guess, side, budget, threshold, width, max_leaves, calibration), sides


def path_prob(tree, node):
    prob = 1.0
    while node != ROOT:
        prob *= PROBS[(tree.tokens[node] % 10)]
        node = tree.parents[node]
    return prob


def test_width_one_is_the_main_chain():
    tree, sides = build(5, width=1)
    assert tree.tokens == [10, 20, 30, 40, 50] and tree.parents == [-1, 0, 1, 2, 3]
    assert tree.n_main == 5 and sides == [] and main_chain_tokens(tree) == tree.tokens


def ranks_of(tree, node):
    return tuple(t % 10 for t in _path(tree, node))


@pytest.mark.parametrize("budget", [1, 4, 7, 12])
def test_the_tree_holds_the_nodes_of_highest_path_probability(budget):
    tree, _ = build(budget)
    assert len(tree) == budget
    kept = {ranks_of(tree, n) for n in range(len(tree))}
    frontier = {parent + (r,) for parent in kept | {()} for r in range(3)} - kept
    assert min(_prod(k) for k in kept) >= max(_prod(f) for f in frontier) - 1e-12
    assert tree.n_main == max(len(k) for k in kept if set(k) == {0})  # the main chain: rank 0 all the way


def test_the_trigger_stops_when_the_best_branch_falls_below_the_threshold():
    tree, _ = build(64, threshold=0.1)
    assert all(path_prob(tree, n) >= 0.1 for n in range(len(tree)))
    assert len(tree) == sum(
        1 for d in range(1, 8) for ranks in itertools.product(range(3), repeat=d) if _prod(ranks) >= 0.1
    )  # exactly the branches still above the threshold


def _prod(ranks):
    out = 1.0
    for r in ranks:
        out *= PROBS[r]
    return out


def test_the_branch_limit_is_kept():
    tree, _ = build(12, max_leaves=2)
    assert tree.leaves <= 2 and len(tree) == 12


def test_side_passes_are_spent_only_on_expanded_side_nodes():
    tree, sides = build(6)
    assert tree.side_passes == len(sides)
    for path in sides:  # each expanded side node is in the tree
        assert any(_path(tree, n) == path for n in range(len(tree)))


def _ancestors(tree, node):
    out = []
    while tree.parents[node] != ROOT:
        node = tree.parents[node]
        out.append(node)
    return out


def _path(tree, node):
    out = []
    while node != ROOT:
        out.append(tree.tokens[node])
        node = tree.parents[node]
    return out[::-1]


def test_calibration_learns_a_twin_drafter_and_the_tree_becomes_a_chain():
    calibration = Calibration()
    for _ in range(30):  # the target always takes the top token: the main chain is accepted whole
        tree, _ = build(8, calibration=calibration)
        main = [
            n
            for n in range(len(tree))
            if tree.tokens[n] % 10 == 0 and all(tree.tokens[a] % 10 == 0 for a in _ancestors(tree, n))
        ]
        calibration.observe(tree, main)
    assert calibration(0, 0.6) > 0.85 and calibration(1, 0.3) < 0.3  # above and below their raw confidences
    tree, _ = build(8, calibration=calibration)
    assert tree.tokens == [10, 20, 30, 40, 50, 60, 70, 80]


def sampled_guess(depth, confidence):
    q = ((1, 2, 3), (confidence, (1 - confidence) / 2, (1 - confidence) / 2))
    return Guess(1, confidence, 2, q[1][1], None, (), q, position=100 + depth)


def test_sampled_trees_add_sibling_draws_only_where_the_draft_is_unsure():
    confidences = [0.9, 0.4, 0.95, 0.3]
    tree = sampled_tree(
        lambda d: sampled_guess(d, confidences[d]),
        budget=6,
        threshold=None,
        alt_below=0.5,
        siblings=1,
        max_leaves=8,
        seed=5,
    )
    levels = {}
    for i, parent in enumerate(tree.parents):
        levels.setdefault(parent, []).append(i)
    assert [len(kids) for kids in levels.values()] == [1, 2, 1, 2]  # siblings at the unsure depths 2 and 4
    assert tree.n_main == 4 and len(tree.qs) == len(tree)
    for kids in levels.values():  # siblings carry their parent's one q
        assert len({tree.qs[k] for k in kids}) == 1
    wire = tree.wire()["draft_probs"][0]
    assert wire["tokens"] == [1, 2, 3] and wire["probs"] == pytest.approx([0.9, 0.05, 0.05])


def test_sampled_trees_stop_on_the_cumulative_draft_probability():
    tree = sampled_tree(
        lambda d: sampled_guess(d, 0.9), budget=16, threshold=0.5, alt_below=0.5, siblings=1, max_leaves=8, seed=0
    )
    assert tree.n_main == len(tree) == 7  # 0.9 ** 7 < 0.5 <= 0.9 ** 6: the seventh node is the last
