"""The hand-written part of the synthetic iMessage corpus: people, threads, scenes, questions.

Everything here is fixed text: the same for every seed and every corpus size. The generator
(`tests.support.chat_corpus`) gives the scripted messages their guids, writes them into a real
``chat.db`` and fills the rest of the archive with everyday filler that never mentions a
golden term (`KEY_TERMS` plus every alternative of every fact).

The story: the owner ("Me") lives in San Francisco until June 2016, then moves to Seattle
for a job at Halcyon Labs. Family is in Boston (brother Jordan moved to Denver in 2015).
Scenes are conversations of a few lines; a line with a label is evidence a golden question
names. Times are UTC, between 14:00 and 23:00, so a scene never crosses a day boundary in UTC
or in US time zones.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

__all__ = [
    "BODY_ONLY",
    "EXTRA_CHATS",
    "KEY_TERMS",
    "ME",
    "PEOPLE",
    "QUESTIONS",
    "SCENES",
    "THREADS",
    "Line",
    "Person",
    "QuestionSpec",
    "Reaction",
    "Scene",
    "ThreadSpec",
]

ME = "me"
"""Sender key of the archive's owner."""


@dataclass(frozen=True)
class Person:
    """A contact: key, display name, addresses (the first is the one group chats use)."""

    key: str
    name: str
    addresses: tuple[str, ...]


@dataclass(frozen=True)
class ThreadSpec:
    """A chat: members (person keys; the owner is always in), display name, 1:1 address."""

    key: str
    members: tuple[str, ...]
    name: str | None = None
    address: str | None = None
    service: str = "iMessage"


@dataclass(frozen=True)
class Line:
    """One scripted message: sender key (or `ME`), text, evidence label ('' = none)."""

    sender: str
    text: str
    label: str = ""


@dataclass(frozen=True)
class Reaction:
    """A tapback on a labelled line; ``removed_after_min`` adds a later removal row."""

    target: str
    by: str
    kind: str
    removed_after_min: int | None = None


@dataclass(frozen=True)
class Scene:
    """A conversation in one thread (None: the message is joined to no chat)."""

    thread: str | None
    at: datetime
    lines: tuple[Line, ...]
    reactions: tuple[Reaction, ...] = ()


@dataclass(frozen=True)
class QuestionSpec:
    """A golden question over labelled lines; facts are AND of OR-groups."""

    id: str
    kind: str
    question: str
    labels: tuple[str, ...]
    facts: tuple[tuple[str, ...], ...]


PEOPLE: tuple[Person, ...] = (
    Person("priya", "Priya Raman", ("+14155550142", "priya.raman@icloud.com")),
    Person("marcus", "Marcus Bell", ("+14155550178",)),
    Person("dana", "Dana Kowalski", ("+15105550113",)),
    Person("jordan", "Jordan Hale", ("+16175550126",)),
    Person("bea", "Bea Okafor", ("bea.okafor@gmail.com",)),
    Person("mom", "Mom", ("+16175550190",)),
    Person("dad", "Dad", ("+16175550191",)),
    Person("theo", "Theo Lindqvist", ("+14155550155",)),
    Person("nadia", "Nadia Haddad", ("+14155550164",)),
    Person("owen", "Owen Park", ("+14155550107",)),
    Person("grace", "Grace Liu", ("+12065550138",)),
    Person("hector", "Hector Alvarez", ("+12065550172",)),
    Person("ines", "Ines Duarte", ("ines.duarte@outlook.com",)),
    Person("sophie", "Sophie Brandt", ("+14155550119",)),
    Person("kenji", "Kenji Mori", ("+12065550183",)),
    Person("rachel", "Rachel Stein", ("+16175550147",)),
    Person("lucy", "Lucy Ferreira", ("+12065550199",)),
    Person("sunil", "Sunil Raman", ("+14155550161",)),
    Person("carol", "Carol Hale", ("+16175550133",)),
    Person("ruth", "Ruth Abernathy", ("+12065550121",)),
)
"""Twenty contacts; Priya has a phone number and an e-mail address."""

THREADS: tuple[ThreadSpec, ...] = (
    ThreadSpec("priya", ("priya",), address="+14155550142"),
    ThreadSpec("priya-mail", ("priya",), address="priya.raman@icloud.com"),
    ThreadSpec("marcus", ("marcus",), address="+14155550178"),
    ThreadSpec("dana", ("dana",), address="+15105550113"),
    ThreadSpec("jordan", ("jordan",), address="+16175550126"),
    ThreadSpec("bea", ("bea",), address="bea.okafor@gmail.com"),
    ThreadSpec("mom", ("mom",), address="+16175550190"),
    ThreadSpec("family", ("mom", "dad", "jordan", "rachel", "carol"), name="Family"),
    ThreadSpec("crew", ("grace", "marcus", "bea", "kenji"), name="Climbing crew"),
    ThreadSpec("work", ("theo", "nadia", "owen")),
    ThreadSpec("books", ("sophie", "priya", "dana", "ines"), name="Book club"),
    ThreadSpec("building", ("hector", "ruth")),
)
"""The twelve scripted threads (two group chats have no display name)."""

BODY_ONLY = frozenset({"dana-blender-2018", "nadia-pilot-2021", "bea-computers-2023"})
"""Labels stored only in ``attributedBody`` (``text`` NULL), as newer macOS writes them."""

EXTRA_CHATS: dict[str, tuple[str, ...]] = {"me-halcyon-2016": ("priya",)}
"""Label -> further threads the message is joined to (a message in two chats)."""


def _at(stamp: str) -> datetime:
    return datetime.strptime(stamp, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


def _scene(
    thread: str | None, stamp: str, *lines: tuple[str, ...], reactions: tuple[Reaction, ...] = ()
) -> Scene:
    return Scene(thread, _at(stamp), tuple(Line(*line) for line in lines), reactions)


SCENES: tuple[Scene, ...] = (
    # ------------------------------------------------------------------ 2013
    _scene("work", "2013-01-08 18:10",
           ("theo", "Who took my stapler. I am not joking this time."),
           ("nadia", "It's in the supply closet where it belongs, Theo."),
           ("owen", "Lunch? The Thai place has the lunch special again"),
           (ME, "In. 12:15?")),
    _scene("bea", "2013-02-09 19:12",
           (ME, "How did the laptop rescue go?"),
           ("bea", "It did not go. I held the power button for thirty seconds like the forum "
                   "said and now it just beeps at me."),
           ("bea", "Honestly I'd rather rebuild a carburetor than deal with a computer. "
                   "Computers hate me and the feeling is mutual.", "bea-computers-2013"),
           (ME, "Want me to come look at it Saturday?"),
           ("bea", "I will pay you in dumplings")),
    _scene("crew", "2013-03-16 17:05",
           ("kenji", "Flea market haul: a first pressing of Kind of Blue for twelve dollars. "
                     "Vinyl just sounds warmer than any stream, fight me.", "kenji-vinyl-2013"),
           ("grace", "Is that the jazz one?"),
           ("kenji", "It is THE jazz one."),
           ("marcus", "Twelve dollars is also what I paid for my running shoes, so we both won")),
    _scene("marcus", "2013-05-19 19:40",
           (ME, "How was the 5k?? Send proof"),
           ("marcus", "Running is just falling forward and catching yourself for half an hour. "
                      "I finished, I did not enjoy it, and I'm never doing it again.",
            "marcus-running-2013"),
           (ME, "So you're signing up for the next one"),
           ("marcus", "Absolutely not. I'm taking up a sport you can do sitting down.")),
    _scene("priya", "2013-06-14 20:30",
           ("priya", "Are you still coming to Sunil's thing on Friday?"),
           (ME, "Yes! Should I bring anything?"),
           ("priya", "Just yourself and maybe a bag of ice. Our freezer is tiny.")),
    _scene("family", "2013-11-28 16:30",
           ("mom", "Turkey is in. Jordan, you're on potatoes, no excuses this year."),
           ("jordan", "I have been practicing. Mostly by watching videos."),
           ("rachel", "Aunt Carol is bringing the green bean thing again"),
           ("carol", "I can see this chat, Rachel."),
           ("dad", "I like the green bean thing."),
           ("mom", "Nobody likes the green bean thing, Frank.")),
    # ------------------------------------------------------------------ 2014
    _scene("mom", "2014-03-02 17:25",
           ("mom", "Did you get the package? I sent your winter coat, you left it here at "
                   "Christmas."),
           (ME, "Got it! Thank you"),
           ("mom", "Wear it. San Francisco is colder than you think.")),
    _scene("priya", "2014-04-12 21:15",
           ("priya", "Sunil made me test drive a Nissan Leaf today"),
           ("priya", "Quiet as a library, I'll give it that. But eighty miles of range? I'd be "
                     "stranded halfway to Tahoe.", "priya-ev-2014"),
           (ME, "So that's a no"),
           ("priya", "That's a 'not until it can get me to Tahoe and back'.")),
    _scene("dana", "2014-08-17 18:45",
           ("dana", "Tomatoes got blight AGAIN. Third summer in a row. I think my backyard is "
                    "cursed.", "dana-garden-2014"),
           (ME, "Noooo. Did you try the copper spray?"),
           ("dana", "Tried everything. Next year I'm growing something the fungus can't ruin. "
                    "Like rocks.")),
    _scene("crew", "2014-09-20 16:20",
           ("grace", "Gym climbing is fine for winter, but real rock is the whole point. Who's "
                     "in for Smith Rock in October?", "grace-climb-2014"),
           ("bea", "Me! As long as nobody makes me lead anything"),
           ("marcus", "I'll drive if someone else does snacks"),
           ("kenji", "Can't, we have band practice every weekend in October"),
           (ME, "I'm in. I'll bring the big cooler.")),
    _scene("work", "2014-11-08 22:05",
           ("owen", "Okay. Don't tell anyone outside this chat. I bought a ring. I'm asking "
                    "Lena on New Year's Eve.", "owen-ring-2014"),
           ("nadia", "OWEN"),
           ("theo", "Congrats man. Do you have a plan or are you winging it"),
           ("owen", "Rooftop, fireworks, the works. Unless it pours, then the kitchen."),
           (ME, "She's going to say yes. Also we are going to be insufferable about this.")),
    # ------------------------------------------------------------------ 2015
    _scene("work", "2015-01-01 19:30",
           ("owen", "She said yes!!! Ring fit and everything", "owen-ring-2015"),
           ("nadia", "🎉🎉🎉"),
           ("theo", "Told you"),
           reactions=(Reaction("owen-ring-2015", ME, "loved"),
                      Reaction("owen-ring-2015", "theo", "liked"))),
    _scene("priya-mail", "2015-02-07 18:15",
           ("priya", "Texting from my email because my phone is in a bag of rice. Don't ask."),
           (ME, "What did you do"),
           ("priya", "Sunil knocked it into the sink. He's sleeping on the couch.")),
    _scene("work", "2015-03-11 20:50",
           ("theo", "They moved us to the open-plan floor. I can hear six phone calls and "
                    "someone's microwaved fish."),
           ("theo", "I'd honestly take a pay cut to work from my couch.", "theo-wfh-2015"),
           ("owen", "The fish guy is in marketing. We know who he is."),
           (ME, "Noise-cancelling headphones, best money I ever spent")),
    _scene("crew", "2015-05-09 17:35",
           ("grace", "Half marathon in June, who's in?"),
           ("marcus", "Signed up for the half because Grace shamed me in front of everyone. My "
                      "knees have already filed a formal complaint.", "marcus-running-2015"),
           ("bea", "I'll be at the finish line with a sign and zero intention of running"),
           ("grace", "That's the spirit")),
    _scene("jordan", "2015-06-23 23:00",
           ("jordan", "Got the offer from the brewery in Denver. Mountains, sunshine, no "
                      "humidity. Tell me one reason to say no.", "jordan-denver-2015"),
           (ME, "Mom will cry"),
           ("jordan", "Mom cries at commercials"),
           (ME, "Fair. Take it.")),
    _scene("books", "2015-10-14 21:10",
           ("sophie", "Finished The Goldfinch last night.", "sophie-goldfinch-2015a"),
           ("sophie", "I'm sorry, but that ending was a cop-out. Eight hundred pages for a "
                      "lecture about art and fate?", "sophie-goldfinch-2015"),
           ("dana", "I liked the Vegas part though"),
           ("priya", "I'm only on page 300, no spoilers please!!"),
           ("ines", "Next month something under 300 pages, I beg you")),
    _scene("family", "2015-12-24 15:40",
           ("mom", "Church at 4, dinner at 6. Dad has been assigned carving again, god help us"),
           ("dad", "I carved perfectly fine last year"),
           ("jordan", "You carved the platter"),
           ("rachel", "I have the video")),
    # ------------------------------------------------------------------ 2016
    _scene("work", "2016-02-10 19:25",
           ("theo", "Random but relevant: my old manager at Halcyon Labs is hiring for a data "
                    "role in Seattle. Want me to pass your name along?", "theo-halcyon-2016"),
           (ME, "Seattle?? Hm. Yes, pass it along. Can't hurt to talk."),
           ("nadia", "Don't you dare leave us"),
           ("owen", "Seattle has great coffee and no sun, you'll fit right in")),
    _scene("crew", "2016-02-26 22:40",
           ("bea", "My work laptop froze in the middle of the client presentation. Frozen. "
                   "Cursor and all. I swear these machines can smell fear.",
            "bea-computers-2016"),
           ("kenji", "Did you try turning it off and on again"),
           ("bea", "Kenji I will end you"),
           ("grace", "Paper slides. Bring back paper slides.")),
    _scene("marcus", "2016-03-14 18:55",
           ("marcus", "Back from Lisbon! Ines dragged me up every hill in Alfama and I ate my "
                      "body weight in pastéis de nata.", "marcus-lisbon-2016"),
           (ME, "Jealous. Was it as good as she promised?"),
           ("marcus", "Better. The famous tram is a tourist trap but the views are worth it.")),
    _scene("priya-mail", "2016-04-18 17:05",
           (ME, "Got the offer from Halcyon Labs!! It means moving to Seattle in June.",
            "me-halcyon-2016"),
           ("priya", "WHAT. Congratulations!! Also no, you can't leave"),
           ("priya", "Okay you can leave, but I'm visiting every summer")),
    _scene("mom", "2016-04-20 23:10",
           (ME, "Mom, I took the job. I'm moving to Seattle in June."),
           ("mom", "Seattle is so far. Who is going to come to Sunday dinner?",
            "mom-seattle-2016a"),
           ("mom", "I'm proud of you. I'm also going to complain about this for a while."),
           (ME, "That's fair")),
    _scene("family", "2016-05-02 21:00",
           ("mom", "I looked it up, it rains there 150 days a year. Pack the good boots.",
            "mom-seattle-2016b"),
           ("jordan", "Denver gets 300 days of sun, just saying"),
           ("dad", "I'll help you drive the truck up if you want company"),
           ("rachel", "Road trip!! Send pictures of Crater Lake")),
    _scene("dana", "2016-06-03 21:05",
           ("dana", "Last dinner before you move? Friday at that taco place you like"),
           (ME, "Yes please"),
           ("dana", "I'm going to cry into my margarita, fair warning")),
    _scene("crew", "2016-08-14 20:45",
           ("kenji", "My turntable needle snapped and the replacement costs more than my first "
                     "car did.", "kenji-vinyl-2016"),
           ("marcus", "Was your first car a shoebox"),
           ("kenji", "It was a 1994 Corolla, so yes")),
    _scene("building", "2016-09-04 18:30",
           ("hector", "Welcome to the building! Fair warning, they're tearing down the "
                      "laundromat across the street for condos. There goes the neighborhood.",
            "hector-condos-2016"),
           ("ruth", "Hector has been saying 'there goes the neighborhood' since 1998"),
           (ME, "Thanks both! Where do people do laundry now?"),
           ("ruth", "Basement machines. Bring quarters and patience.")),
    _scene("family", "2016-11-19 22:15",
           (ME, "Flight gets into Logan at 9:40 Wednesday night"),
           ("dad", "I'll grab you at Logan Wednesday night. Text me when you land and I'll "
                   "circle.", "dad-airport-2016"),
           ("mom", "I'll keep a plate warm"),
           ("jordan", "I land Thursday morning, somebody save me some pie")),
    # ------------------------------------------------------------------ 2017
    _scene("jordan", "2017-03-08 22:20",
           ("jordan", "Mom sent me a care package with socks and three cans of soup. I'm 29."),
           (ME, "She sent me an umbrella. Just the umbrella, no note.")),
    _scene("books", "2017-04-05 20:20",
           ("dana", "Sorry I'm behind on the reading, I spent the whole weekend building raised "
                    "beds. My neighbor helped me haul two tons of soil.", "dana-garden-2017"),
           ("sophie", "Raised beds are a valid excuse"),
           ("ines", "Send pictures when things grow!")),
    _scene("crew", "2017-04-18 23:05",
           ("kenji", "We got the opening slot at the Crocodile on Friday!! First real venue. "
                     "Guest list has room for four.", "kenji-croc-2017"),
           ("grace", "Put me down!"),
           ("bea", "Me too, I'll even wear earplugs politely"),
           (ME, "Count me in"),
           reactions=(Reaction("kenji-croc-2017", "grace", "loved"),)),
    _scene("crew", "2017-07-12 19:45",
           (ME, "Anyone have a dentist they actually like? Mine tried to sell me a $900 "
                "whitening package."),
           ("kenji", "Go to Dr. Feld on Pike. She's gentle and she never upsells you.",
            "kenji-dentist-2017"),
           ("grace", "Seconding... wait no, mine is in Ballard. Ignore me.")),
    _scene("crew", "2017-08-03 21:30",
           (ME, "Went to Dr. Feld. Zero upsell, painless cleaning. You were right.",
            "me-dentist-2017"),
           ("kenji", "I'm always right about two things: dentists and bass lines")),
    _scene("family", "2017-09-16 15:20",
           ("dad", "A moose walked right past the cabin this morning. Right past the porch. "
                   "Didn't get a picture, you'll have to trust me.", "dad-moose-2017"),
           ("jordan", "Sure, Dad"),
           ("mom", "He really did, I heard him yelling"),
           ("rachel", "Pics or it didn't happen")),
    _scene("priya-mail", "2017-10-02 17:50",
           ("priya", "Sunil wants a Tesla. I keep telling him the batteries die in the cold and "
                     "he keeps sending me videos of people driving them in Norway.",
            "priya-ev-2017"),
           (ME, "Norway is very cold. He has a point"),
           ("priya", "Don't you dare take his side")),
    _scene("crew", "2017-10-21 22:10",
           ("grace", "Rolled my ankle on the descent at Index. Not even on the climb, on the "
                     "walk down. Outdoors is still worth it.", "grace-climb-2017"),
           ("marcus", "Ice, elevate, and stop walking down things"),
           (ME, "Feel better! Want me to drop off soup?")),
    _scene("family", "2017-11-05 20:40",
           ("jordan", "Denver update: at this altitude pasta takes forever to cook and one beer "
                      "hits like two.", "jordan-denver-2017"),
           ("dad", "That explains a lot about your last visit"),
           ("mom", "Are you eating vegetables at least")),
    # ------------------------------------------------------------------ 2018
    _scene("priya", "2018-05-16 18:05",
           ("priya", "Heads up, Saturday is Dana's birthday. She'll say she doesn't want a "
                     "fuss. She wants a fuss.", "priya-birthday-2018"),
           (ME, "Noted! Flowers or cake?"),
           ("priya", "Both. Obviously both.")),
    _scene("dana", "2018-05-19 22:30",
           ("dana", "Thank you for the flowers!! Who told you, I was keeping it quiet"),
           (ME, "A little bird. Have the best day")),
    _scene("dana", "2018-06-07 19:20",
           ("dana", "Confession: the blender didn't 'just stop working'. I tried to crush ice "
                    "with the lid off and it walked right off the counter. I owe you a "
                    "blender.", "dana-blender-2018"),
           (ME, "I KNEW IT"),
           ("dana", "The new one is on its way. It's nicer than yours was, so technically "
                    "you're welcome")),
    _scene("crew", "2018-07-25 17:15",
           (ME, "Doing the Olympic coast trip in August. Does anyone have a tent I can "
                "borrow? Mine has a hole the size of a raccoon."),
           ("grace", "Take my two-person tent. Just dry it out before you give it back, the "
                     "last borrower didn't.", "grace-tent-2018"),
           ("marcus", "The last borrower was me and I maintain it was already damp")),
    _scene("work", "2018-08-02 19:05",
           ("nadia", "Team lunch Friday? Theo picks, then we complain"),
           ("theo", "Ramen."),
           ("owen", "Every time"),
           (ME, "Can't, I'm in Seattle, remember? Eat a bowl for me")),
    _scene("building", "2018-08-12 16:40",
           ("hector", "The new building now blocks my morning sun. My basil is sulking and so "
                      "am I.", "hector-condos-2018"),
           ("ruth", "Move the pots to the other window, it gets the afternoon light"),
           ("hector", "The other window is where the cat sits. The cat has seniority.")),
    _scene("marcus", "2018-10-08 21:35",
           ("marcus", "FINISHED CHICAGO. 4:12. Cried at mile 24 and I'm not ashamed.",
            "marcus-running-2018"),
           (ME, "!!!!! From 'never again' to a full marathon. Who even are you"),
           ("marcus", "A man who cannot walk down stairs today"),
           reactions=(Reaction("marcus-running-2018", ME, "loved"),)),
    # ------------------------------------------------------------------ 2019
    _scene("family", "2019-02-10 20:05",
           ("rachel", "Sooo... there's going to be a new cousin this September. Due date is "
                      "the 14th!", "rachel-baby-2019"),
           ("mom", "RACHEL!!! Oh honey!!"),
           ("carol", "I've known for a week and it nearly killed me"),
           ("jordan", "Congrats Rach!"),
           reactions=(Reaction("rachel-baby-2019", "mom", "loved"),
                      Reaction("rachel-baby-2019", "jordan", "emphasized"))),
    _scene("bea", "2019-03-22 22:50",
           ("bea", "Caved and bought a Chromebook. It's the only computer I've ever owned that "
                   "I can't break, because it barely does anything.", "bea-computers-2019"),
           (ME, "That is the most Bea review possible"),
           ("bea", "Five stars. Would not break again.")),
    _scene("bea", "2019-06-30 18:25",
           ("bea", "Did you hear?? Marcus and Ines got engaged in Porto! He told me not to tell "
                   "anyone, so obviously I'm telling you.", "bea-engaged-2019"),
           (ME, "WHAT. Finally!!"),
           ("bea", "Act surprised when he calls you")),
    _scene("mom", "2019-07-14 23:20",
           ("mom", "Okay, I admit the ferry ride to Bainbridge was beautiful. I see why you "
                   "stay.", "mom-seattle-2019"),
           (ME, "Told you! Come back in August when it's sunny"),
           ("mom", "Don't push your luck")),
    _scene("jordan", "2019-08-06 22:40",
           ("jordan", "Handed in my notice at the brewery today. Starting with a solar installer "
                      "in September.", "jordan-quit-2019"),
           (ME, "Whoa, big change! How are you feeling?"),
           ("jordan", "Terrified. Excited. Mostly excited. No more 5am mash days.")),
    _scene("family", "2019-10-12 19:00",
           (ME, "Meet Biscuit! Adopted him from the shelter this morning. He has already "
                "eaten a sock.", "me-biscuit-2019"),
           ("dad", "What kind of dog is that"),
           (ME, "The shelter said 'mostly beagle, some mystery'"),
           ("carol", "He's perfect"),
           reactions=(Reaction("me-biscuit-2019", "mom", "loved"),
                      Reaction("me-biscuit-2019", "rachel", "loved"),
                      Reaction("me-biscuit-2019", "jordan", "laughed"),
                      Reaction("me-biscuit-2019", "dad", "liked", removed_after_min=9))),
    _scene("books", "2019-11-06 20:55",
           ("sophie", "Next pick: something short and funny, please, after last month's brick."),
           ("ines", "I nominate the one about the octopus"),
           ("dana", "Seconded"),
           ("priya", "I'll host. Sunil is making samosas")),
    _scene("building", "2019-12-14 17:10",
           ("ruth", "Package room is full again, someone ordered a kayak"),
           ("hector", "It was me. I have no regrets."),
           (ME, "Please take us out in it")),
    # ------------------------------------------------------------------ 2020
    _scene("work", "2020-04-07 21:10",
           ("theo", "Three weeks of working from my kitchen table and I've talked to my cat more "
                    "than to any human.", "theo-wfh-2020"),
           ("nadia", "Your cat is a better listener than most of engineering"),
           ("owen", "Lena says hi. We are on day 19 of puzzle season")),
    _scene("priya", "2020-05-20 18:35",
           ("priya", "Lisbon is the first place I'm going once anyone is allowed to go "
                     "anywhere again."),
           (ME, "Marcus will send you a ten-page list"),
           ("priya", "He already did")),
    _scene("mom", "2020-06-09 16:15",
           ("mom", "Carol's hip replacement went fine! She's already complaining about the "
                   "hospital food, so she's back to normal.", "mom-carol-2020"),
           (ME, "Oh thank god. Tell her I'll call tomorrow"),
           ("mom", "Call after 10, she's sleeping a lot")),
    _scene("dana", "2020-08-15 20:05",
           ("dana", "Pandemic project update: the garden now makes more zucchini than any human "
                    "can eat. Please take some. I'm begging.", "dana-garden-2020"),
           (ME, "Ship me zucchini bread and we have a deal")),
    _scene("priya-mail", "2020-09-03 19:40",
           ("priya", "Okay, I've come around. We ordered a Chevy Bolt. Gas prices made the "
                     "argument for me.", "priya-ev-2020"),
           (ME, "Sunil must be unbearable"),
           ("priya", "He made a slideshow")),
    _scene("jordan", "2020-10-18 21:55",
           ("jordan", "Rent here went up 30% since I moved. The mountains are still free at "
                      "least.", "jordan-denver-2020"),
           (ME, "Come to Seattle, our rent is also terrible but with more clouds")),
    _scene("crew", "2020-11-21 18:15",
           ("kenji", "Sold half my records to cover the move to the new place. Kept every jazz "
                     "record though. Priorities.", "kenji-vinyl-2020"),
           ("grace", "What happened to the turntable?"),
           ("kenji", "The turntable stays. I'd sell a kidney first.")),
    _scene("marcus", "2020-12-05 19:50",
           ("marcus", "Wedding is officially postponed to next fall. Again."),
           (ME, "Third time's the charm"),
           ("marcus", "Ines says if it moves again we're eloping to the courthouse")),
    # ------------------------------------------------------------------ 2021
    _scene("crew", "2021-02-17 22:25",
           ("marcus", "Knee surgery is scheduled for May, so my running days are officially "
                      "over. Switching to cycling. I miss the long runs more than I expected.",
            "marcus-running-2021"),
           ("grace", "Cycling gang welcomes you"),
           ("bea", "Pour one out for the knees")),
    _scene("work", "2021-03-23 20:35",
           ("theo", "Confession after a year of this: I'm way more productive at home. Not "
                    "going back to five days in the office.", "theo-wfh-2021"),
           ("nadia", "Same. Although I miss the free snacks")),
    _scene("building", "2021-06-05 17:30",
           ("hector", "Heads up: the building manager told me rents are going up 8% in the "
                      "spring. If your lease renews soon, lock it in now.", "hector-rent-2021"),
           (ME, "Ugh. Thanks for the warning, I'll email them today"),
           ("ruth", "Eight percent! For the same leaky windows")),
    _scene("work", "2021-07-24 18:50",
           ("nadia", "Passed my checkride this morning!! I'm officially a private pilot ✈️",
            "nadia-pilot-2021"),
           ("theo", "Nadia! Does this mean you can fly us to lunch"),
           ("nadia", "Only if lunch is in a town with a small airport and you pay for fuel"),
           reactions=(Reaction("nadia-pilot-2021", "owen", "emphasized"),
                      Reaction("nadia-pilot-2021", ME, "loved"))),
    # ------------------------------------------------------------------ 2022
    _scene("crew", "2022-03-09 21:45",
           ("grace", "I'm teaching the intro lead course at the gym now. Indoor walls are where "
                     "you learn, but outside is where you fall in love with it.",
            "grace-climb-2022"),
           ("kenji", "Coach Grace!"),
           ("bea", "Can I take it if I promise to only climb indoors")),
    _scene(None, "2022-06-13 16:05",
           ("lucy", "Hi! This is Lucy from Paws & Co. I'll come by at 3 each afternoon this "
                    "week to walk Biscuit while you're away. Where do you keep the spare key?",
            "lucy-walk-2022")),
    _scene("priya", "2022-09-27 19:30",
           ("priya", "Two years with the Bolt and I'm never going back to gas. Charging at home "
                     "overnight is the best part. Planning road trips around chargers is the "
                     "worst part.", "priya-ev-2022"),
           (ME, "Would you buy another one?"),
           ("priya", "In a heartbeat")),
    # ------------------------------------------------------------------ 2023
    _scene("bea", "2022-10-19 21:40",
           ("bea", "Are you around next weekend? I'm in Seattle for a conference Thursday to "
                   "Sunday"),
           (ME, "Yes! Come for dinner Saturday"),
           ("bea", "Only if Biscuit is there")),
    _scene("crew", "2023-01-26 22:05",
           ("bea", "Plot twist: I signed up for a Python night class. I still think computers "
                   "are out to get me, but now I can at least talk back.", "bea-computers-2023"),
           ("kenji", "Bea writing code is the real plot twist"),
           ("grace", "So proud. Please never touch my laptop")),
    _scene("work", "2023-04-19 19:15",
           ("theo", "New hybrid policy: Tuesdays and Thursdays in the office, the rest from "
                    "home. Honestly it's the sweet spot.", "theo-wfh-2023"),
           ("owen", "We're fully back, five days. Send help")),
    _scene("family", "2023-05-14 21:20",
           ("mom", "Still wish you lived closer, but you seem really happy out there, and "
                   "that's what matters.", "mom-seattle-2023"),
           ("jordan", "Mom got sentimental in the group chat"),
           ("rachel", "Aww")),
    _scene("marcus", "2023-09-30 20:25",
           ("marcus", "One year married today. Ines made me watch the wedding video twice."),
           (ME, "Happy anniversary to you both!")),
    _scene("building", "2023-10-07 16:50",
           ("hector", "Grudging admission: the bakery on the ground floor of those condos makes "
                      "the best croissant I've had since Madrid.", "hector-condos-2023"),
           ("ruth", "He goes every day. I've seen him.")),
    # ------------------------------------------------------------------ 2024
    _scene("jordan", "2024-06-22 22:35",
           ("jordan", "Nine years in Denver. It's home now, even if the I-70 traffic ruins every "
                      "ski weekend.", "jordan-denver-2024"),
           (ME, "Happy Denverversary")),
    _scene("books", "2024-08-11 20:10",
           ("dana", "Second place for my dahlias at the Alameda County Fair!! The ribbon is "
                    "going on the fridge.", "dana-garden-2024"),
           ("sophie", "Congrats!!! Bring a bouquet to book club"),
           ("priya", "Second place is robbery")),
    _scene("crew", "2024-11-10 18:40",
           ("kenji", "Streaming is great for finding new stuff, but every Sunday morning I still "
                     "play one whole album on the turntable, start to finish.",
            "kenji-vinyl-2024"),
           ("bea", "That's the most Kenji thing I've ever heard")),
)
"""Every scripted conversation, oldest first."""


def _q(qid: str, kind: str, question: str, labels: tuple[str, ...],
       *facts: tuple[str, ...]) -> QuestionSpec:
    return QuestionSpec(qid, kind, question, labels, tuple(facts))


QUESTIONS: tuple[QuestionSpec, ...] = (
    # ------------------------------------------------------------------ aggregation
    _q("agg-bea-computers", "aggregation", "What does Bea think about computers?",
       ("bea-computers-2013", "bea-computers-2016", "bea-computers-2019",
        "bea-computers-2023"),
       ("chromebook",), ("python",), ("froze", "frozen", "presentation")),
    _q("agg-priya-ev", "aggregation", "What does Priya think about electric cars?",
       ("priya-ev-2014", "priya-ev-2017", "priya-ev-2020", "priya-ev-2022"),
       ("leaf", "range"), ("bolt",), ("charging", "chargers")),
    _q("agg-marcus-running", "aggregation", "How has Marcus felt about running over the years?",
       ("marcus-running-2013", "marcus-running-2015", "marcus-running-2018",
        "marcus-running-2021"),
       ("chicago",), ("knee",), ("cycling",)),
    _q("agg-mom-seattle", "aggregation", "How does Mom feel about me living in Seattle?",
       ("mom-seattle-2016a", "mom-seattle-2016b", "mom-seattle-2019", "mom-seattle-2023"),
       ("far", "closer"), ("rain",), ("ferry", "bainbridge")),
    _q("agg-dana-garden", "aggregation", "What has Dana said about her garden over the years?",
       ("dana-garden-2014", "dana-garden-2017", "dana-garden-2020", "dana-garden-2024"),
       ("tomato", "blight"), ("zucchini",), ("dahlia",)),
    _q("agg-theo-wfh", "aggregation", "What's Theo's take on working from home?",
       ("theo-wfh-2015", "theo-wfh-2020", "theo-wfh-2021", "theo-wfh-2023"),
       ("productive",), ("hybrid", "tuesday", "thursday"), ("couch", "open-plan", "open plan")),
    _q("agg-jordan-denver", "aggregation", "How does Jordan like living in Denver?",
       ("jordan-denver-2015", "jordan-denver-2017", "jordan-denver-2020",
        "jordan-denver-2024"),
       ("altitude", "mountain"), ("rent",), ("ski", "i-70")),
    _q("agg-grace-outdoors", "aggregation",
       "What does Grace think about climbing outdoors compared to the gym?",
       ("grace-climb-2014", "grace-climb-2017", "grace-climb-2022"),
       ("smith rock", "index"), ("ankle",), ("teach", "instructor")),
    _q("agg-kenji-vinyl", "aggregation", "What has Kenji said about vinyl over the years?",
       ("kenji-vinyl-2013", "kenji-vinyl-2016", "kenji-vinyl-2020", "kenji-vinyl-2024"),
       ("kind of blue", "jazz"), ("needle",), ("sold",), ("sunday", "whole album")),
    _q("agg-hector-condos", "aggregation",
       "How does Hector feel about the condos they built across the street?",
       ("hector-condos-2016", "hector-condos-2018", "hector-condos-2023"),
       ("laundromat",), ("basil", "sun"), ("bakery", "croissant")),
    # ------------------------------------------------------------------ verification
    _q("ver-marcus-lisbon", "verification", "Did Marcus ever say he'd been to Lisbon, and when?",
       ("marcus-lisbon-2016",),
       ("lisbon",), ("2016",)),
    _q("ver-jordan-quit", "verification",
       "Did Jordan ever tell me he was leaving his job? When was that?",
       ("jordan-quit-2019",),
       ("brewery",), ("solar",), ("2019",)),
    _q("ver-dana-blender", "verification", "Did Dana ever own up to breaking my blender? When?",
       ("dana-blender-2018",),
       ("lid",), ("2018",)),
    _q("ver-owen-proposal", "verification",
       "Did Owen ever say he was going to propose, and how did it go?",
       ("owen-ring-2014", "owen-ring-2015"),
       ("lena",), ("new year",), ("2014", "2015")),
    _q("ver-dad-moose", "verification", "Did my dad really claim he saw a moose? Where and when?",
       ("dad-moose-2017",),
       ("cabin",), ("2017",)),
    _q("ver-nadia-pilot", "verification",
       "Did Nadia ever say she got her pilot's license, and when?",
       ("nadia-pilot-2021",),
       ("checkride", "private pilot"), ("2021",)),
    _q("ver-rachel-baby", "verification",
       "Did Rachel ever announce she was expecting? When was the baby due?",
       ("rachel-baby-2019",),
       ("september",), ("2019",)),
    _q("ver-kenji-venue", "verification",
       "Did Kenji's band ever get to play a proper venue? Which one, and when?",
       ("kenji-croc-2017",),
       ("crocodile",), ("2017",)),
    _q("ver-sophie-ending", "verification",
       "Did Sophie ever complain about how a book club book ended? Which book, and when?",
       ("sophie-goldfinch-2015a", "sophie-goldfinch-2015"),
       ("goldfinch",), ("2015",)),
    _q("ver-me-halcyon", "verification",
       "Did I ever tell Priya about the Halcyon job offer, and when?",
       ("me-halcyon-2016",),
       ("april",), ("2016",)),
    # ------------------------------------------------------------------ relation
    _q("rel-dana-birthday", "relation", "Who told me it was Dana's birthday?",
       ("priya-birthday-2018",),
       ("priya",)),
    _q("rel-dentist", "relation", "Who recommended the dentist I ended up going to?",
       ("kenji-dentist-2017", "me-dentist-2017"),
       ("kenji",), ("feld",)),
    _q("rel-engagement", "relation", "Who told me that Marcus and Ines got engaged?",
       ("bea-engaged-2019",),
       ("bea",)),
    _q("rel-rent-warning", "relation",
       "Who warned me that my rent was about to go up, and by how much?",
       ("hector-rent-2021",),
       ("hector",), ("8%", "8 percent", "eight percent")),
    _q("rel-tent", "relation", "Whose camping gear did I borrow for the coast trip?",
       ("grace-tent-2018",),
       ("grace",), ("tent",)),
    _q("rel-carol-surgery", "relation", "Who let me know how Aunt Carol's operation went?",
       ("mom-carol-2020",),
       ("mom", "mother")),
    _q("rel-dog-walker", "relation", "Who was looking after my dog while I was away?",
       ("lucy-walk-2022",),
       ("lucy",)),
    _q("rel-laughed-dog", "relation",
       "Who in the family laughed at my news about adopting a dog?",
       ("me-biscuit-2019",),
       ("jordan",)),
    _q("rel-job-tip", "relation",
       "Who first told me about the job opening that got me to Seattle?",
       ("theo-halcyon-2016",),
       ("theo",)),
    _q("rel-airport", "relation",
       "Who offered to pick me up from the airport when I flew home for Thanksgiving?",
       ("dad-airport-2016",),
       ("dad", "father")),
)
"""The golden questions: 10 aggregation, 10 verification, 10 relation."""

KEY_TERMS: frozenset[str] = frozenset({
    # people and places of the story
    *(p.key for p in PEOPLE), "aunt", "lena", "frank", "feld", "biscuit", "halcyon", "paws",
    "seattle", "denver", "boston", "logan", "lisbon", "porto", "alfama", "chicago", "tahoe",
    "norway", "olympic", "ballard", "pike", "madrid", "alameda", "vegas",
    # topics of the questions and their evidence
    "computer", "laptop", "code", "coding", "electric", "tesla", "nissan", "chevy",
    "battery", "batteries", "charger", "gas", "running", "marathon", "5k", "jog", "jogging",
    "surgery", "bike", "garden", "gardening", "soil", "raised beds", "office", "remote",
    "work from home", "working from home", "commute", "climb", "climbing", "gym", "rock",
    "vinyl", "record", "turntable", "album", "band", "gig", "venue", "concert", "condo",
    "building", "neighborhood", "neighbor", "brewery", "job", "offer", "quit", "hiring",
    "blender", "engaged", "ring", "propose", "proposal", "wedding", "married", "moose",
    "pilot", "plane", "flying", "airport", "flight", "pregnant", "baby", "cousin", "expecting",
    "book", "novel", "reading", "ending", "birthday", "dentist", "teeth", "lease", "landlord",
    "apartment", "camping", "trip", "hip", "hospital", "operation", "dog", "puppy", "walk",
    "thanksgiving", "move", "moving",
})
"""Words and phrases filler never uses, on top of every fact alternative (plural forms too)."""
