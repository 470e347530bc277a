"""The GPU run's prompts: small fixed sets written for it, so that the GPU machine needs no data.

The benchmark runner's prompt sets (``specdraft.apps.bench.datasets``) come from archives that pip
downloads, which the GPU machine cannot. These are short original texts in the same three shapes:

- ``GRAMMAR_TEXTS``: clean paragraphs; ``grammar_sources`` injects learner errors into them with the
  benchmark's own seeded injector (``specdraft.apps.bench.datasets.grammar_errors.inject_errors``).
- ``RAG_ITEMS``: a question and three passages, the first holding the answer (what a retriever
  returned, best first).
- ``CONVERSATIONS``: multi-turn chats ending in a user turn that asks to rework an earlier answer
  (the case where drafting from the conversation pays).

Each set is in a fixed order; a run takes a prefix of it.
"""

from __future__ import annotations

import random

GRAMMAR_ERRORS_PER_TEXT = 4

GRAMMAR_TEXTS = (
    "The library in our town opened a new reading room last spring. It has large windows, quiet desks and a "
    "small collection of maps that visitors can study. Many students went there after school because the "
    "old building was often crowded.",
    "My brother decided to learn the guitar when he was twelve. He practised every evening, and after a year "
    "he could play several songs for the family. Our neighbours said that the music was a pleasant change "
    "from the noise of the street.",
    "The company announced that it will reduce the price of its tickets in the winter. The manager explained "
    "that fewer people travel during those months and that lower prices should attract more visitors to the "
    "coast.",
    "Scientists have studied the river for many years. They measured the temperature of the water, counted "
    "the fish and recorded how the level changed after heavy rain. Their report describes a slow recovery "
    "of the ecosystem.",
    "When we arrived at the station, the train had already left. We waited in a small cafe for the next one "
    "and talked about the places we wanted to visit. The journey took longer than we expected, but we "
    "enjoyed the view of the mountains.",
    "Our teacher asked us to write a short story about an animal. I chose a cat that lives in a lighthouse "
    "and watches the ships at night. The story was read to the whole class on Friday.",
)


def grammar_sources(count: int) -> list[tuple[str, str]]:
    """``(id, text with errors)`` for the first ``count`` texts; the errors are a pure function of
    the text's position (``random.Random(f"gpu-grammar-{i}")``)."""
    from specdraft.apps.bench.datasets.grammar_errors import inject_errors

    items = []
    for i, text in enumerate(GRAMMAR_TEXTS[:count]):
        corrupted, _ = inject_errors(text, GRAMMAR_ERRORS_PER_TEXT, random.Random(f"gpu-grammar-{i}"))
        items.append((f"grammar-{i}", corrupted))
    return items


RAG_ITEMS = (
    {
        "question": "When was the Eiffel Tower completed and how tall was it then?",
        "passages": (
            "The Eiffel Tower was completed in March 1889 as the entrance arch of the World's Fair in Paris. "
            "At 300 metres it was the tallest man-made structure in the world until 1930.",
            "Gustave Eiffel's company also built bridges and viaducts, among them the Garabit viaduct in the "
            "south of France, finished in 1884.",
            "Paris hosted several World's Fairs in the nineteenth century; the 1889 fair marked the centenary "
            "of the French Revolution.",
        ),
    },
    {
        "question": "What do honey bees use to build their combs?",
        "passages": (
            "Honey bees build their combs from beeswax, which worker bees secrete from glands on the underside "
            "of their abdomen. The wax is shaped into hexagonal cells that store honey and pollen and hold the "
            "developing brood.",
            "A honey bee colony usually has one queen, several thousand worker bees and, in summer, a few "
            "hundred drones.",
            "Bumblebees nest in small colonies, often underground, and store nectar in wax pots rather than in "
            "regular combs.",
        ),
    },
    {
        "question": "Why does the Moon always show the same face to the Earth?",
        "passages": (
            "The Moon always shows the same face to the Earth because it is tidally locked: it rotates once on "
            "its axis in the same time that it takes to orbit the Earth, about 27.3 days.",
            "The far side of the Moon was first photographed in 1959 by the Soviet probe Luna 3.",
            "Tides on Earth are caused mainly by the Moon's gravity, with a smaller contribution from the Sun.",
        ),
    },
    {
        "question": "What is the main ingredient of traditional hummus?",
        "passages": (
            "Traditional hummus is made mainly from cooked chickpeas, blended with tahini, lemon juice, garlic "
            "and salt. It is usually served with olive oil and eaten with flat bread.",
            "Tahini is a paste of ground sesame seeds that is also used in halva and in many sauces.",
            "Falafel are fried balls of ground chickpeas or broad beans, popular across the Middle East.",
        ),
    },
)

CONVERSATIONS = (
    (
        {"role": "user", "content": "Write a Python function that returns the squares of a list of numbers."},
        {
            "role": "assistant",
            "content": "Here is a simple function:\n\n```python\ndef squares(numbers):\n    result = []\n"
            "    for number in numbers:\n        result.append(number * number)\n    return result\n```\n\n"
            "It loops over the list and appends the square of each number.",
        },
        {
            "role": "user",
            "content": "Rename the function to square_all and add a docstring. Show the whole function again.",
        },
    ),
    (
        {"role": "user", "content": "Give me a short packing list for a weekend hiking trip."},
        {
            "role": "assistant",
            "content": "1. Backpack\n2. Water bottle\n3. Rain jacket\n4. Warm sweater\n5. Map and compass\n"
            "6. First aid kit\n7. Snacks and sandwiches\n8. Sunscreen\n9. Head torch",
        },
        {"role": "user", "content": "Repeat the list, but add a tent and a sleeping bag at the end."},
    ),
    (
        {"role": "user", "content": "Write a two-sentence description of a quiet seaside village."},
        {
            "role": "assistant",
            "content": "The village sits at the end of a narrow road, where small white houses face a harbour "
            "full of fishing boats. In the evening the only sounds are the waves and the gulls "
            "circling over the old stone pier.",
        },
        {"role": "user", "content": "Now repeat the description, but set it in winter."},
    ),
    (
        {"role": "user", "content": "Explain in three steps how to make a cup of tea."},
        {
            "role": "assistant",
            "content": "1. Boil fresh water in a kettle.\n2. Pour the hot water over a tea bag in a cup and "
            "let it steep for three to five minutes.\n3. Remove the tea bag and add milk or sugar "
            "if you like.",
        },
        {"role": "user", "content": "Write the same steps again for green tea, which needs cooler water."},
    ),
)
