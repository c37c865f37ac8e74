"""Everyday filler for the synthetic iMessage corpus: short exchanges from templates.

An exchange is a short dialogue pattern (plans, food, weather, work, errands, jokes) whose
``{slots}`` are filled from word lists; lines are tagged with a role (``A``, ``B``, ``C``)
the generator maps to members of a thread. `FillerWriter` draws exchanges and re-draws any
whose text hits the golden blocklist (`Blocklist`), so filler never carries a golden term.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

__all__ = ["GROUP_NAMES", "Blocklist", "FillerWriter"]

_SLOTS: dict[str, tuple[str, ...]] = {
    "food": (
        "tacos", "ramen", "pho", "pizza", "dumplings", "curry", "bagels", "burritos", "sushi",
        "falafel", "bibimbap", "noodles", "barbecue", "fried chicken", "pad thai", "banh mi",
        "dim sum", "poke", "shawarma", "waffles", "pancakes", "gyros", "empanadas", "udon",
        "hot pot", "mac and cheese", "chili", "lasagna", "burgers", "tikka masala", "brunch",
        "fish and chips", "tamales", "gnocchi", "kimchi fried rice", "spring rolls", "quesadillas",
        "paella", "bao", "lentil soup", "enchiladas", "katsu", "laksa", "biryani", "arepas",
    ),
    "place": (
        "the usual spot", "that place on 5th", "the food trucks", "the corner place",
        "the place with the patio", "the diner", "the noodle bar", "the taqueria", "the pub",
        "the deli", "the spot by the park", "that tiny place near the pier",
        "the place with the long line", "the one with the neon sign", "the food hall",
        "the cafe on the corner", "that cash-only place",
    ),
    "time": ("6", "6:30", "7", "7:30", "8", "noon", "12:30", "5:45", "8:15", "9"),
    "day": (
        "Monday", "Wednesday", "Friday", "Saturday", "tonight", "tomorrow", "this weekend",
        "next week",
    ),
    "show": (
        "the new season", "that heist movie", "the baking show", "the octopus documentary",
        "the finale", "the detective series", "the space movie", "that cooking competition",
        "the true crime podcast", "the dragon show", "the new spy thriller",
        "that sitcom everyone quotes", "the nature documentary", "the magic competition",
    ),
    "errand": (
        "grab milk", "pick up the dry cleaning", "return that package", "get groceries",
        "grab paper towels", "pick up a pizza", "get stamps", "return the drill",
        "grab coffee filters", "pick up the prescription",
    ),
    "drink": (
        "coffee", "tea", "a beer", "boba", "a smoothie", "hot chocolate", "lemonade",
        "iced coffee", "a latte", "kombucha", "margaritas",
    ),
    "weather": (
        "gorgeous", "so windy", "freezing", "sticky and gross", "foggy", "hailing",
        "snowing a little", "perfect patio weather", "weirdly warm", "pouring", "gray and cold",
    ),
    "minutes": ("5", "10", "15", "20", "25"),
    "thing": (
        "keys", "sunglasses", "umbrella", "headphones", "water bottle", "jacket", "wallet",
        "scarf", "glasses", "gloves",
    ),
    "game": (
        "trivia", "board games", "bowling", "mini golf", "karaoke", "pool", "darts",
        "a puzzle night",
    ),
    "snack": ("chips", "popcorn", "cookies", "hummus", "salsa", "pretzels", "ice cream",
              "grapes", "cheese and crackers", "brownies", "clementines"),
    "food2": ("Thai", "Mexican", "Indian", "pizza", "Korean", "Ethiopian", "sandwiches",
              "Vietnamese", "Greek", "leftovers"),
}

_PATTERNS: tuple[tuple[str, ...], ...] = (
    ("A|want to grab {food} {day}?", "B|yes!! {time}?", "A|{time} works. {place}?",
     "B|see you there"),
    ("A|{minutes} min late, sorry!!", "B|no worries, I'll grab a table"),
    ("A|did you watch {show} yet?", "B|not yet, no spoilers", "A|my lips are sealed. but WOW"),
    ("A|it's {weather} out today", "B|ugh, staying in", "A|smart"),
    ("A|can you {errand} on your way back?", "B|yep", "A|you're the best"),
    ("A|that meeting could have been an email", "B|they always could",
     "A|I need a nap"),
    ("A|{game} {day}?", "B|I'm in", "C|me too", "A|I'll ask around"),
    ("A|why did the scarecrow win an award", "B|why",
     "A|because he was outstanding in his field", "B|I'm leaving this conversation"),
    ("A|what do you call a fake noodle", "B|?", "A|an impasta", "B|unbelievable"),
    ("A|have you seen my {thing}?", "B|kitchen counter?", "A|found it. you're a genius"),
    ("A|I'm making {food} tonight if you want some", "B|omg yes",
     "A|come by around {time}"),
    ("A|{drink}?", "B|always", "A|meet you downstairs in {minutes}"),
    ("A|just got home", "B|👍"),
    ("A|happy Friday!!", "B|finally", "C|🙌"),
    ("A|is it me or is {show} getting worse", "B|it's you", "A|wow okay"),
    ("A|I need a good {food} recommendation", "B|{place}, trust me", "A|noted"),
    ("A|how was your weekend?", "B|lazy. perfect. you?",
     "A|cleaned the whole kitchen, very proud of myself"),
    ("A|I owe you {drink} for last time", "B|I'll collect {day}"),
    ("A|can't make it {day}, something came up", "B|no stress, next time", "A|for sure"),
    ("A|the bus is late again", "B|classic"),
    ("A|did you ever find a plumber?", "B|yes, finally. the sink works again", "A|🙌"),
    ("A|I made way too much {food}. want some?", "B|is that even a question"),
    ("A|can you send me that recipe", "B|it's mostly butter", "A|perfect"),
    ("A|what are you doing {day}?", "B|nothing yet", "A|{game}?", "B|sure"),
    ("A|I just spilled {drink} all over myself", "B|lol classic",
     "A|and I have a call in {minutes} min"),
    ("A|{weather} again", "B|I'm so over it"),
    ("A|the dishwasher is making the noise again", "B|kick it gently", "A|worked??",
     "B|always does"),
    ("A|we still on for {day}?", "B|yes!", "A|great, I'll get a table for {time}"),
    ("A|I'm at the store, need anything?", "B|{snack}!", "A|got it"),
    ("A|reminder that you said you'd help me paint {day}", "B|I regret everything",
     "A|wear old clothes"),
    ("A|this week has lasted a hundred years", "B|and it's only Wednesday somehow"),
    ("A|did you get my email?", "B|yes, replying tonight"),
    ("A|lost my {thing} again", "B|check your pocket", "A|...found it"),
    ("A|look at this sunset", "B|wow", "C|stunning"),
    ("A|I tried that {food} place", "B|and??", "A|life changing",
     "B|adding it to the list"),
    ("A|can I borrow your ladder {day}?", "B|yes, it's in the garage"),
    ("A|call you in {minutes}?", "B|sure"),
    ("A|I think I'm getting a cold", "B|soup and sleep", "A|yes, doctor"),
    ("A|this {drink} is terrible", "B|then why are you drinking it", "A|spite"),
    ("A|ok leaving now", "B|drive safe"),
    ("A|I fixed the wobbly table", "B|with what", "A|a coaster and confidence"),
    ("A|what time is the thing {day}?", "B|{time} I think", "A|thanks"),
    ("A|sorry, fell asleep at 9", "B|honestly iconic"),
    ("A|anyone want to split a pizza {day}?", "B|always", "C|extra olives please",
     "B|absolutely not"),
    ("A|my phone is at 3%, if I vanish that's why", "B|noted"),
    ("A|the {food} at {place} was so good", "B|told you", "A|going back {day}"),
    ("A|do you still have my {thing}?", "B|oh no. yes. sorry", "A|lol bring it {day}"),
    ("A|I accidentally bought two of everything at the store", "B|that's just a sale",
     "A|I'm choosing to believe you"),
    ("A|packing {snack} for later, want some?", "B|you know it"),
    ("A|who's up for {game} {day}?", "B|me", "C|depends, who's bringing {snack}",
     "A|I will"),
    ("A|{food} or {food2}?", "B|{food2}", "A|correct answer"),
    ("A|never trust a forecast", "B|it said sunny and now it's {weather}"),
    ("A|the upstairs people are vacuuming at 11pm again", "B|bold",
     "A|I'm going to bake them something passive aggressive"),
    ("A|heading to the farmers market, want anything?", "B|peaches if they have them",
     "A|on it"),
    ("A|I started a jigsaw and now I live at the table", "B|how many pieces",
     "A|too many"),
    ("A|new haircut, be honest", "B|it's great!", "A|you're lying but thank you"),
    ("A|what was that {food} place we liked", "B|{place}?", "A|yes! thank you"),
    ("A|cold brew or regular?", "B|cold brew, always"),
    ("A|I think I left the oven on", "B|GO", "A|false alarm, it was off"),
    ("A|do we need to bring anything {day}?", "B|just {snack}", "A|easy"),
    ("A|the power is out on our street", "B|candles and cards time",
     "A|playing cards by flashlight as we speak"),
    ("A|how's your week going?", "B|busy but good. yours?", "A|long. I need {drink}"),
    ("A|made it home", "B|yay, thanks for letting me know"),
    ("A|did you see the moon tonight?", "B|huge!! and orange", "A|unreal"),
    ("A|I have leftover {food} if anyone wants it", "B|dibs", "C|you're too fast"),
    ("A|what's the plan for {day}?", "B|{game} then {food}?", "A|perfect plan"),
    ("A|I need a nap and a vacation", "B|in that order"),
    ("A|stuck in line at the pharmacy", "B|bring a snack next time", "A|lesson learned"),
    ("A|watching {show} tonight, come over?", "B|bringing {snack}"),
    ("A|remind me to give you back your {thing}", "B|I'll believe it when I see it"),
    ("A|ok who ate the last of the {snack}", "B|not me", "C|definitely not me",
     "A|suspicious"),
    ("A|is the {food} place open {day}?", "B|I think until 9", "A|let's go"),
    ("A|good morning!! it's {weather} today", "B|morning! stay dry"),
    ("A|thanks for {food} last night!", "B|anytime, that was fun", "A|next one's on me"),
    ("A|can't find parking anywhere", "B|circle the block twice, always works"),
    ("A|making a grocery list, anything you want?", "B|{snack} and {drink}", "A|done"),
    ("A|sorry, missed your call", "B|no worries, nothing urgent",
     "A|call you after dinner"),
    ("A|I laughed so hard at {show}", "B|the last five minutes!!", "A|yes!!"),
    ("A|are you coming {day}?", "B|yes but late", "A|we'll save you a seat"),
    ("A|I think I left my {thing} at your place", "B|yep, it's here", "A|phew"),
    ("A|finally cleaned out the fridge", "B|brave", "A|I found a lemon from another era"),
    ("A|{day} was so fun", "B|let's do it again soon", "C|agreed"),
    ("A|who has the good umbrella", "B|not me, I lost it", "A|of course"),
    ("A|I'm bringing {snack} {day}", "B|you're a hero"),
    ("A|what are we getting for dinner", "B|{food2}?", "A|deal"),
    ("A|my sourdough starter died", "B|rest in peace", "A|it had a good life"),
    ("A|the wifi here is so slow", "B|hotspot?", "A|that's slow too"),
    ("A|just saw this, sorry!",),
    ("A|on my way",),
    ("A|here!",),
    ("A|thanks!!",),
    ("A|sounds good",),
    ("A|haha yes",),
    ("A|call me when you can",),
    ("A|😂😂😂",),
)

_TAILS = ("",) * 12 + (" 😂", " 🙏", " 👍", " 😅", "!!", " lol", " haha")

GROUP_NAMES: tuple[str, ...] = (
    "Trivia night", "Brunch bunch", "Fantasy league", "Softball", "Game night", "Potluck",
    "The usual suspects", "Pickup soccer", "Sourdough support group", "Costume party",
    "Karaoke crew", "Secret Santa", "Pub quiz", "Board game people",
    "Chili cook-off", "Kickball", "Puzzle swap", "Movie club",
)
"""Display names filler group chats may carry (checked against the blocklist too)."""


class Blocklist:
    """Whole-word, case-insensitive matcher of golden terms (words or phrases).

    Args:
        terms: words/phrases; single words also block their plural forms (``-s``, ``-es``,
            ``-y`` -> ``-ies``).
    """

    def __init__(self, terms: Iterable[str]) -> None:
        variants: set[str] = set()
        for term in terms:
            term = term.strip().lower()
            if not term:
                continue
            variants.add(term)
            if term.isalpha():
                variants.update({term + "s", term + "es"})
                if term.endswith("y"):
                    variants.add(term[:-1] + "ies")
        self.terms = frozenset(variants)
        alternation = "|".join(re.escape(t) for t in sorted(self.terms, key=lambda t: (-len(t), t)))
        self._pattern = re.compile(rf"(?<!\w)(?:{alternation})(?!\w)", re.IGNORECASE)

    def hits(self, text: str) -> list[str]:
        """Return the blocked terms found in ``text`` (lowercased, in order of occurrence)."""
        return [m.group(0).lower() for m in self._pattern.finditer(text)]


class FillerWriter:
    """Draws filler exchanges clear of a blocklist.

    Args:
        rng: the generator's random source (the only one used).
        blocklist: terms filler must never contain.
        max_tries: re-draws per exchange before giving up.
    """

    def __init__(self, rng: random.Random, blocklist: Blocklist, *, max_tries: int = 200) -> None:
        self._rng = rng
        self._blocklist = blocklist
        self._max_tries = max_tries
        self.rejected = 0

    def exchange(self) -> list[tuple[str, str]]:
        """Return one exchange as ``(role, text)`` lines; roles are ``A``, ``B``, ``C``.

        Raises:
            RuntimeError: no clean exchange after ``max_tries`` draws (a template problem).
        """
        for _ in range(self._max_tries):
            pattern = self._rng.choice(_PATTERNS)
            values = {slot: self._rng.choice(words) for slot, words in _SLOTS.items()}
            lines = []
            for line in pattern:
                role, template = line.split("|", 1)
                text = template.format(**values) + self._rng.choice(_TAILS)
                lines.append((role, text))
            if not any(self._blocklist.hits(text) for _, text in lines):
                return lines
            self.rejected += 1
        raise RuntimeError(f"no filler exchange clear of the blocklist in {self._max_tries} draws")

    def group_name(self) -> str | None:
        """Return a display name for a filler group chat, or None (about 40% have none)."""
        if self._rng.random() < 0.4:
            return None
        for _ in range(self._max_tries):
            name = self._rng.choice(GROUP_NAMES)
            if not self._blocklist.hits(name):
                return name
        return None
