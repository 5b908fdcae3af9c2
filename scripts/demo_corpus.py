"""Short children's stories, made from a seed: the demo model's corpus (docs/demo-model.md).

    .venv/bin/python scripts/demo_corpus.py [--seed S] [--stories N] [-o FILE]

Every story has a hero and a friend (children and animals, with names), a place, an object,
feelings, one of a few plots (something lost and found, a storm, sharing, a race, building,
helping, a surprise) and dialogue. The text is plain English, one story a line, and a
function of the seed and the count alone (Python's ``random.Random``, whose sequence is
fixed across versions for ``random``, ``choice`` and ``shuffle`` on the same inputs).

``vocabulary()`` is every word the generator can write: the dictionary the demo model's
words are checked against. It is read from the same tables the stories come from, so it
cannot drift from them.
"""

import argparse
import random
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

GIRLS = ["Lily", "Mia", "Sara", "Anna", "Lucy", "Emma", "Zoe", "Amy", "Ella", "Rose", "Kim"]
BOYS = ["Tom", "Ben", "Max", "Sam", "Leo", "Jack", "Tim", "Finn", "Noah", "Dan", "Joe"]
CHILDREN = {"she": ["girl"], "he": ["boy"]}
ANIMALS = ["cat", "dog", "bunny", "bear", "duck", "fox", "bird", "frog", "mouse", "puppy"]
SIZES = ["little", "small", "big", "young", "kind", "funny", "shy", "happy"]
PLACES = {
    "park": ["the swings", "a big tree", "the pond", "the slide"],
    "forest": ["a tall tree", "a mossy log", "the bushes", "a little hill"],
    "garden": ["the flowers", "the fence", "a big pot", "the vegetables"],
    "beach": ["the sand", "a big rock", "the waves", "a shell"],
    "farm": ["the barn", "the hay", "the pond", "the old fence"],
    "town": ["the shop", "the bakery", "the bridge", "the fountain"],
    "meadow": ["the tall grass", "the flowers", "a small stream", "a big stone"],
}
OBJECTS = [
    "red ball",
    "blue kite",
    "toy boat",
    "shiny stone",
    "yellow hat",
    "little book",
    "green cup",
    "soft blanket",
    "wooden car",
    "pink balloon",
    "silver key",
    "teddy bear",
]
GOOD = ["happy", "glad", "proud", "excited", "calm", "thankful"]
BAD = ["sad", "scared", "worried", "lonely", "upset", "grumpy"]
OPENINGS = [
    "Once upon a time",
    "One day",
    "One sunny morning",
    "Long ago",
    "One rainy afternoon",
    "One warm summer day",
]
WEATHER = ["The sun was shining.", "The sky was blue.", "The wind was soft.", "It was a nice day."]
FOODS = ["apples", "cookies", "bread", "carrots", "cake", "berries", "soup"]
ENDINGS = [
    "From that day on, {hero} and {friend} were best friends.",
    "{hero} smiled. It was the best day ever.",
    "That night, {hero} went to sleep with a big smile.",
    "{hero} learned that it is good to {lesson}.",
    "And they all lived happily ever after.",
    "{Pro} felt {good}, and {pro} hugged {friend}.",
]
LESSONS = ["share", "help others", "be brave", "be kind", "never give up", "say sorry"]


@dataclass(frozen=True)
class Character:
    """One character of a story: its name, what it is, its pronouns."""

    name: str
    kind: str
    pro: str  # he / she
    pos: str  # his / her
    obj: str  # him / her


def _character(rng: random.Random, taken: set[str]) -> Character:
    """Return a child or an animal with a name not in ``taken``."""
    pro = rng.choice(["he", "she"])
    names = [n for n in (GIRLS if pro == "she" else BOYS) if n not in taken]
    name = rng.choice(names)
    kind = rng.choice(CHILDREN[pro] if rng.random() < 0.5 else ANIMALS)
    return Character(
        name, kind, pro, "her" if pro == "she" else "his", "her" if pro == "she" else "him"
    )


# The plots: each a list of sentences, read in order. Fields: {hero} {friend} {Pro} {pro}
# {pos} {obj} (hero's), {fpro} {fpos} {fobj} (friend's), {thing} {place} {spot} {good} {bad}
# {food} {lesson}. A list within a plot is a choice of one.
PLOTS: list[list[str | list[str]]] = [
    [  # lost and found
        "{hero} had a {thing}. {Pro} loved it very much.",
        "{Pro} took the {thing} to the {place} to play.",
        "{hero} played near {spot} all morning.",
        "Then {pro} looked down. The {thing} was gone!",
        "{hero} felt {bad}. {Pro} looked everywhere, but {pro} could not find it.",
        ['"Where is my {thing}?" {pro} cried.', '"Oh no, my {thing} is lost!" said {hero}.'],
        "{friend} the {fkind} came to help.",
        [
            '"Do not be {bad}," said {friend}. "I will help you look."',
            '"I can help you," said {friend}.',
        ],
        "They looked under {spot} and behind the trees.",
        "At last, {friend} saw something. It was the {thing}!",
        '"Thank you, {friend}!" said {hero}. "You are a good friend."',
    ],
    [  # the storm
        "{hero} was a {size} {kind} who lived near the {place}.",
        "{Pro} liked to play near {spot} with {friend}.",
        "One day, big dark clouds came into the sky. The wind began to blow.",
        "{hero} felt {bad}. {Pro} did not like storms.",
        [
            '"I am {bad}," said {hero}. "What if the storm is too big?"',
            '"I want to go home," said {hero}.',
        ],
        '{friend} held {pos} hand. "We can be brave together," {fpro} said.',
        "They ran to a safe place and waited. The rain fell and fell.",
        "Soon the storm was over, and the sun came out again.",
        "{hero} felt {good}. {Pro} was not {bad} anymore.",
    ],
    [  # sharing
        "{hero} had some {food}. {Pro} wanted to eat it all.",
        "Then {pro} saw {friend} the {fkind}. {friend} looked {bad}.",
        '"What is wrong?" asked {hero}.',
        [
            '"I am hungry," said {friend}. "I have no food."',
            '"I have nothing to eat," said {friend}.',
        ],
        "{hero} looked at the {food}. Then {pro} smiled.",
        '"You can have some of my {food}," {pro} said.',
        "{friend} was very {good}. They sat by {spot} and ate together.",
        "The {food} tasted better when they shared.",
    ],
    [  # the race
        "{hero} and {friend} went to the {place}.",
        '"Let us have a race!" said {friend}. "We can run to {spot}."',
        "{hero} was {bad}. {Pro} was not very fast.",
        '"Ready, set, go!" They ran as fast as they could.',
        "{friend} was in front, but then {fpro} fell down.",
        "{hero} stopped to help {fobj}. {Pro} did not want to win alone.",
        '"Are you okay?" asked {hero}. "Yes, thank you," said {friend}.',
        "They walked to {spot} together, and they both laughed.",
    ],
    [  # building
        "{hero} wanted to make something big.",
        "{Pro} found sticks, leaves and stones at the {place}.",
        '"I will build a little house," {pro} said.',
        "{Pro} worked and worked, but the house fell down.",
        "{hero} felt {bad}. {Pro} wanted to give up.",
        '{friend} came by and said, "Let me help you. We can do it together."',
        "They put the sticks up again, one by one. This time the house was strong.",
        "{hero} felt {good}. {Pro} put {pos} {thing} inside the little house.",
    ],
    [  # helping an animal
        "{hero} went for a walk in the {place} with {friend}.",
        "Near {spot}, they heard a small sound. It was a baby bird.",
        "The baby bird could not fly. It was {bad} and cold.",
        '"We must help it," said {hero}.',
        "{friend} brought a {thing} and {hero} put the bird on it.",
        "They took care of the bird and gave it water.",
        "The next day, the bird was strong again. It flew up into the sky.",
        '"Goodbye, little bird!" they said. They were very {good}.',
    ],
    [  # the surprise
        "It was {friend}'s birthday, but {friend} was {bad}.",
        "{Fpro} thought that nobody remembered.",
        "{hero} had a plan. {Pro} made a card and found a {thing}.",
        "{Pro} took {food} and went to the {place}.",
        'When {friend} came, everyone shouted, "Surprise!"',
        "{friend} was so {good}. {Fpro} jumped up and down.",
        '"Thank you for the {thing}," said {friend}. "This is the best birthday!"',
        "They ate {food} and played by {spot} until the sun went down.",
    ],
    [  # the quarrel
        "{hero} and {friend} were playing with a {thing} at the {place}.",
        '"It is my turn!" said {hero}. "No, it is my turn!" said {friend}.',
        "They both pulled the {thing}, and {friend} fell down.",
        "{friend} began to cry. {hero} felt {bad}.",
        '"I am sorry," said {hero}. "You can have a turn."',
        "{friend} smiled. They took turns, and the game was fun again.",
    ],
]


def _fill(rng: random.Random, line: str | list[str], fields: dict[str, str]) -> str:
    return (rng.choice(line) if isinstance(line, list) else line).format(**fields)


def story(rng: random.Random) -> str:
    """Return one story, drawing every choice from ``rng``."""
    hero = _character(rng, set())
    friend = _character(rng, {hero.name})
    place = rng.choice(sorted(PLACES))
    fields = {
        "hero": hero.name,
        "friend": friend.name,
        "kind": hero.kind,
        "fkind": friend.kind,
        "Pro": hero.pro.capitalize(),
        "pro": hero.pro,
        "pos": hero.pos,
        "obj": hero.obj,
        "fpro": friend.pro,
        "Fpro": friend.pro.capitalize(),
        "fpos": friend.pos,
        "fobj": friend.obj,
        "size": rng.choice(SIZES),
        "place": place,
        "spot": rng.choice(PLACES[place]),
        "thing": rng.choice(OBJECTS),
        "good": rng.choice(GOOD),
        "bad": rng.choice(BAD),
        "food": rng.choice(FOODS),
        "lesson": rng.choice(LESSONS),
    }
    opening = (
        f"{rng.choice(OPENINGS)}, there was a {rng.choice(SIZES)} {hero.kind} named {hero.name}."
    )
    lines = [opening]
    if rng.random() < 0.5:
        lines.append(rng.choice(WEATHER))
    plot = rng.choice(PLOTS)
    lines.extend(_fill(rng, line, fields) for line in plot)
    lines.append(_fill(rng, rng.choice(ENDINGS), fields))
    return " ".join(lines)


def stories(seed: int, count: int) -> Iterator[str]:
    """Yield ``count`` stories from ``seed``."""
    rng = random.Random(seed)
    for _ in range(count):
        yield story(rng)


WORD = re.compile(r"[A-Za-z]+")


def _strings() -> Iterator[str]:
    """Yield every string the stories are made of."""
    yield from GIRLS + BOYS + ANIMALS + SIZES + OBJECTS + GOOD + BAD + FOODS + LESSONS
    yield from OPENINGS + WEATHER + ENDINGS + sorted(PLACES)
    yield from CHILDREN["she"] + CHILDREN["he"] + ["he", "she", "his", "her", "him"]
    yield "there was a named"
    for spots in PLACES.values():
        yield from spots
    for plot in PLOTS:
        for line in plot:
            yield from [line] if isinstance(line, str) else line


def vocabulary() -> frozenset[str]:
    """Return every word (lower case, letters only) the generator can write."""
    words: set[str] = set()
    for text in _strings():
        words.update(w.lower() for w in WORD.findall(re.sub(r"\{[A-Za-z0-9]+\}", " ", text)))
    return frozenset(words)


def main(argv: list[str] | None = None) -> int:
    """Write the stories, one a line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--stories", type=int, default=4000)
    parser.add_argument("-o", "--output", type=Path, help="default: stdout")
    args = parser.parse_args(argv)
    text = "".join(s + "\n" for s in stories(args.seed, args.stories))
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
