"""Generated training text for the chat-tree heads: polite expressions, information
sentences, instructions on many topics, and implicit follow-ups ("make it shorter",
"and in 2023?"). Used only to train the heads (``models/training/chattree.py``); the
app never reads it. Fillers come from Faker, so the heads see varied names, places,
numbers and subjects rather than a few repeated ones.
"""
from __future__ import annotations

import random

POLITE = [
    "Hi!", "Hello!", "Hey there.", "Good morning!", "Good evening.", "Thanks!", "Thank you.", "Thank you so much!",
    "Thanks a lot.", "Great, thanks!", "Perfect, thank you.", "That's very helpful, thanks.", "Awesome!", "Cool.",
    "Nice.", "Wow, impressive.", "I appreciate it.", "Much appreciated!", "You're the best.", "Sounds good.",
    "Okay.", "OK, got it.", "Got it, thanks.", "Alright.", "Great job!", "Well done.", "Lovely.", "Amazing, thank you!",
    "Have a nice day!", "Bye!", "See you.", "Cheers!", "Hello, how are you?", "Hi, hope you're well.",
    "Thanks for the help!", "That's exactly what I needed.", "This is great.", "Brilliant.", "Fantastic!",
    "Hey!", "Thanks again.", "I see.", "Interesting.", "Makes sense.", "Fair enough.", "Oh nice!", "Excellent.",
    "Yes, that works.", "Good to know.", "Haha, nice one.", "Sorry about that.", "No worries.", "Ok thanks",
    "thank you!!", "hi", "hello there", "thx", "great", "perfect", "nice, ty", "Good afternoon.",
]

_INFO = [
    "I am a {job} living in {city}.", "I work as a {job} at {company}.", "My name is {name}.",
    "I have a budget of ${n}.", "We are a team of {small} people.", "My {relative} is {age} years old.",
    "I'm planning a trip to {country} in {month}.", "The meeting is on {date}.", "I live in {city}.",
    "I have been learning {lang} for {small} months.", "Our company {company} sells {product}.",
    "The deadline is {date}.", "I already tried restarting it.", "My laptop runs {os}.",
    "The file has {n} rows and {small} columns.", "I'm allergic to {food}.", "I don't eat {food}.",
    "My favourite band is {band}.", "I prefer short answers.", "I'm a beginner at {topic}.",
    "Here is the paragraph I wrote about {topic}.", "This is for a school project on {topic}.",
    "My code throws an error on line {small}.", "The error message says {error}.", "I got {n} points on the test.",
    "We moved to {city} last year.", "I run {small} kilometres every morning.", "My dog is called {first}.",
    "The app is written in {proglang}.", "I use {proglang} at work.", "My manager is {name}.",
    "I'm vegetarian.", "I have two kids, aged {small} and {age}.", "Our office is near {street}.",
    "The client wants the report by {month}.", "I'm writing a novel about {topic}.",
    "The recipe serves {small} people.", "The product costs ${n}.", "I'm {age} years old.",
    "Context: the project is about {topic}.", "Background: I'm a {job} with {small} years of experience.",
    "For reference, my previous essay was about {topic}.", "I'm based in {country}.",
    "My flight leaves {city} at {hour} o'clock.", "The budget was cut by {small} percent.",
]

_INSTRUCTION = [
    "Write a {form} about {topic}.", "Can you explain {topic} to me?", "What is {topic}?", "How does {topic} work?",
    "Give me {small} ideas for {topic}.", "Summarize the history of {topic}.", "List the pros and cons of {topic}.",
    "How do I {task}?", "What are the best places to visit in {city}?", "Recommend some books about {topic}.",
    "Please draft an email to {name} about {topic}.", "Help me plan a trip to {country}.",
    "Write a {proglang} function that {code_task}.", "Why is {topic} important?", "Compare {topic} and {topic2}.",
    "Create a workout plan for {small} days a week.", "Suggest a recipe with {food}.",
    "Translate 'good morning' into {lang}.", "What should I know before moving to {city}?",
    "Can you write a cover letter for a {job} position?", "Explain the difference between {topic} and {topic2}.",
    "Draft a short speech for {name}'s birthday.", "What's the capital of {country}?",
    "Could you proofread my essay on {topic}?", "Generate a name for a company that sells {product}.",
    "Tell me a joke about {topic}.", "How many calories are in {food}?", "Outline a presentation on {topic}.",
    "I need a slogan for {company}.", "Please write a poem about {topic}.", "What are common mistakes in {topic}?",
    "Describe a typical day of a {job}.", "Is {food} healthy?", "Make a shopping list for a {food} dinner.",
    "Write a haiku about {city}.", "Debug this {proglang} code that {code_task}.", "Who invented {topic}?",
    "Give me a study schedule for learning {lang}.", "What are some interview questions for a {job}?",
    "Plan a {small}-day itinerary for {country}.", "Write a product description for {product}.",
]

IMPLICIT = [
    "continue", "Continue.", "go on", "keep going", "more", "more please", "another one", "give me another",
    "one more", "make it shorter", "shorter", "make it longer", "make it more formal", "more casual please",
    "make it funnier", "simplify it", "explain it more simply", "can you elaborate?", "elaborate", "why?",
    "how so?", "what do you mean?", "expand on that", "in bullet points", "as a table", "put that in a table",
    "rewrite it", "rewrite that", "try again", "again", "fix it", "that doesn't work", "it still fails",
    "translate this to {lang}", "now in {lang}", "in {lang} please", "and in {year}?", "what about {year}?",
    "and {city}?", "what about {city}?", "how about in {country}?", "and for {small} people?", "and the second one?",
    "the first one", "option {small}", "number {small} please", "do the same for {topic}",
    "same but for {topic}", "now do it for {topic}", "make it rhyme", "add more details", "add an example",
    "give an example", "examples?", "sources?", "is that true?", "are you sure?", "really?", "what else?",
    "anything else?", "summarize it", "tl;dr", "in one sentence", "in {small} words", "use fewer words",
    "less technical", "more technical", "explain the code", "add comments", "remove the last paragraph",
    "change the tone", "make it sound professional", "in the style of {name}", "shorter and punchier",
    "the third point again", "go back to the first version", "undo that", "no, the other one", "yes, do it",
    "yes please", "ok do that", "next", "next step", "and then?", "what next?", "and after that?", "and why?",
    "how much?", "when?", "where?", "who?", "what about the cost?", "and the price?", "cheaper options?",
]

_FORMS = ["poem", "short story", "blog post", "essay", "song", "limerick", "tweet", "report", "speech", "review"]
_LANGS = ["French", "German", "Spanish", "Italian", "Japanese", "Dutch", "Portuguese", "Polish", "Korean", "Hindi"]
_PROGLANGS = ["Python", "JavaScript", "Rust", "Go", "Java", "C#", "SQL", "TypeScript", "Bash", "Kotlin"]
_OS = ["Windows 11", "macOS", "Ubuntu", "Fedora", "ChromeOS"]
_FOODS = ["peanuts", "gluten", "chicken", "tofu", "salmon", "lentils", "mushrooms", "rice", "pasta", "eggs",
          "avocado", "chocolate", "cheese", "shrimp", "spinach"]
_TASKS = ["reset my router", "change a tyre", "file my taxes", "bake sourdough bread", "learn to swim",
          "set up a Python virtual environment", "write a resume", "negotiate a raise", "fix a leaking tap",
          "start a podcast", "train for a marathon", "clean a cast iron pan", "back up my phone"]
_CODE = ["reverses a string", "parses a CSV file", "sorts a list of dates", "counts words in a file",
         "validates an email address", "merges two dictionaries", "computes a moving average"]
_ERRORS = ["'KeyError: id'", "'permission denied'", "'segmentation fault'", "'connection refused'",
           "'undefined is not a function'", "'out of memory'"]


def _fill(template: str, rng: random.Random, fake) -> str:
    values = {
        "job": fake.job().lower(), "city": fake.city(), "company": fake.company(), "name": fake.name(),
        "first": fake.first_name(), "country": fake.country(), "month": fake.month_name(),
        "date": fake.date_this_decade().strftime("%B %d"), "n": rng.randint(20, 5000), "small": rng.randint(2, 9),
        "age": rng.randint(3, 80), "relative": rng.choice(["son", "daughter", "mother", "father", "wife", "husband"]),
        "lang": rng.choice(_LANGS), "proglang": rng.choice(_PROGLANGS), "os": rng.choice(_OS),
        "food": rng.choice(_FOODS), "band": fake.last_name() + " and the " + fake.word().title() + "s",
        "topic": _topic(rng, fake), "topic2": _topic(rng, fake), "form": rng.choice(_FORMS),
        "task": rng.choice(_TASKS), "code_task": rng.choice(_CODE), "error": rng.choice(_ERRORS),
        "product": fake.word() + " " + rng.choice(["shoes", "software", "coffee", "bikes", "tea", "lamps"]),
        "street": fake.street_name(), "hour": rng.randint(1, 12), "year": rng.randint(1990, 2030),
    }
    return template.format(**values)


def _topic(rng: random.Random, fake) -> str:
    pick = rng.random()
    if pick < 0.4:
        return fake.bs()
    if pick < 0.7:
        return fake.catch_phrase().lower()
    return rng.choice(["climate change", "the French revolution", "machine learning", "photosynthesis",
                       "the stock market", "black holes", "remote work", "the Roman empire", "quantum computing",
                       "sleep hygiene", "inflation", "the immune system", "jazz", "urban gardening", "chess",
                       "electric cars", "vaccines", "blockchain", "meditation", "the water cycle"])


def _faker(seed: int):
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(seed)
    return fake


def sentences(n_per_label: int, seed: int) -> list[tuple[str, str]]:
    """``(sentence, label)`` pairs, balanced over polite / information / instruction."""
    rng = random.Random(seed)
    fake = _faker(seed)
    out = [(rng.choice(POLITE), "polite") for _ in range(n_per_label)]
    out += [(_fill(rng.choice(_INFO), rng, fake), "information") for _ in range(n_per_label)]
    out += [(_fill(rng.choice(_INSTRUCTION), rng, fake), "instruction") for _ in range(n_per_label)]
    rng.shuffle(out)
    return out


def implicit_follow_ups(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    fake = _faker(seed)
    out = []
    for _ in range(n):
        text = _fill(rng.choice(IMPLICIT), rng, fake)
        if rng.random() < 0.3:
            text = text.capitalize()
        if rng.random() < 0.15:
            text = rng.choice(["ok, ", "thanks, ", "great. ", "hmm, ", "nice! "]) + text
        out.append(text)
    return out


def instructions(n: int, seed: int) -> list[str]:
    """Self-contained requests on a topic of their own (not implicit follow-ups)."""
    rng = random.Random(seed)
    fake = _faker(seed)
    out = []
    for _ in range(n):
        text = _fill(rng.choice(_INSTRUCTION), rng, fake)
        if rng.random() < 0.4:
            text = _fill(rng.choice(_INFO), rng, fake) + " " + text
        out.append(text)
    return out
