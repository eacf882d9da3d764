"""The planner's in-context examples: questions and the plans that answer them.

Ours, written for Hindsight's sources and attribute names, and never taken from the
benchmark's test templates (a test checks that). Every plan here must parse and
validate: each covers operators, sources and phrasings the planner must handle —
counting, sums of extracted amounts, argmax over groups, joins by time overlap,
unnest of multi-valued keys, relative time through ``today()``, weekday and hour
questions, and follow-ups (``previous question | follow-up``).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Example:
    question: str
    plan: str
    tags: tuple[str, ...] = ()


def _ex(question: str, plan: str, *tags: str) -> Example:
    return Example(question, " ".join(plan.split()), tags)


EXAMPLES: tuple[Example, ...] = (
    # ---- counting -----------------------------------------------------------------------
    _ex("How many times did I go swimming in 2023?",
        'APPLY(l=FILTER(l=RETRIEVE(query="swimming"), filter=lambda e: year(e.start) == 2023), fct=len)',
        "count", "workout"),
    _ex("how often did i watch netflix last month",
        'APPLY(l=FILTER(l=RETRIEVE(query="watched Netflix"), filter=lambda e: year(e.start) == year(today() - days(30)) '
        'and month(e.start) == month(today() - days(30))), fct=len)', "count", "relative"),
    _ex("How many mails did I send this year?",
        'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="mail I sent"), attr_names=["direction"], attr_types=[str]), '
        'filter=lambda e: e["direction"] == "sent" and year(e.start) == year(today())), fct=len)', "count", "mail"),
    _ex("How many orders did I place on Amazon in 2022?",
        'APPLY(l=FILTER(l=RETRIEVE(query="Amazon order"), filter=lambda e: year(e.start) == 2022), fct=len)',
        "count", "purchase"),
    _ex("how many podcast episodes did I listen to in May 2024",
        'APPLY(l=FILTER(l=RETRIEVE(query="podcast episode"), filter=lambda e: year(e.start) == 2024 '
        'and month(e.start) == 5), fct=len)', "count", "music"),
    _ex("How many yoga classes did I have on weekends?",
        'APPLY(l=FILTER(l=RETRIEVE(query="yoga class"), filter=lambda e: weekday(e.start) >= 5), fct=len)',
        "count", "weekday"),
    _ex("How many times did I go to the dentist?",
        'APPLY(l=RETRIEVE(query="dentist appointment"), fct=len)', "count", "calendar"),
    _ex("How many conversations did I have with ChatGPT about Python?",
        'APPLY(l=RETRIEVE(query="ChatGPT conversation about Python"), fct=len)', "count", "chat"),
    _ex("How many questions did I ask ChatGPT in March 2024?",
        'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="question I asked ChatGPT"), attr_names=["role"], '
        'attr_types=[str]), filter=lambda e: e["role"] == "user" and year(e.start) == 2024 and month(e.start) == 3), '
        'fct=len)', "count", "chat"),
    _ex("how many messages did i send to claude last week",
        'APPLY(l=FILTER(l=EXTRACT(l=RETRIEVE(query="message I sent to Claude"), attr_names=["role"], '
        'attr_types=[str]), filter=lambda e: e["role"] == "user" and e.start >= today() - days(7)), fct=len)',
        "count", "chat", "relative"),
    _ex("how many runs did i do before 7am",
        'APPLY(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: hour(e.start) < 7), fct=len)', "count", "hour"),
    _ex("On how many days did I listen to music in 2023?",
        'APPLY(l=GROUP_BY(l=EXTRACT(l=FILTER(l=RETRIEVE(query="listened to music"), filter=lambda e: year(e.start) == 2023), '
        'attr_names=["date"], attr_types=[date]), attr_names=["date"]), fct=len)', "count", "group"),
    _ex("How many different artists did I listen to last year?",
        'APPLY(l=GROUP_BY(l=EXTRACT(l=FILTER(l=RETRIEVE(query="songs I listened to"), '
        'filter=lambda e: year(e.start) == year(today()) - 1), attr_names=["artist"], attr_types=[str]), '
        'attr_names=["artist"]), fct=len)', "count", "distinct", "relative"),
    _ex("How many times did I eat sushi?",
        'APPLY(l=RETRIEVE(query="ate sushi"), fct=len)', "count", "food"),
    _ex("how many films did I watch in december",
        'APPLY(l=FILTER(l=RETRIEVE(query="watched a movie"), filter=lambda e: month(e.start) == 12), fct=len)',
        "count", "movie"),
    # ---- sums and averages ------------------------------------------------------------------
    _ex("What did I spend on Amazon in 2023?",
        'SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="Amazon purchase"), attr_names=["total"], attr_types=[float]), '
        'filter=lambda e: year(e.start) == 2023), attr_name="total")', "sum", "purchase"),
    _ex("How much did I spend online last year?",
        'SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="online purchase"), attr_names=["total"], attr_types=[float]), '
        'filter=lambda e: year(e.start) == year(today()) - 1), attr_name="total")', "sum", "relative"),
    _ex("How much did I pay for restaurants in June 2024?",
        'SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="restaurant bill"), attr_names=["amount"], attr_types=[float]), '
        'filter=lambda e: year(e.start) == 2024 and month(e.start) == 6), attr_name="amount")', "sum", "food"),
    _ex("How many kilometres did I cycle in 2023?",
        'SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="cycling"), attr_names=["distance_km"], attr_types=[float]), '
        'filter=lambda e: year(e.start) == 2023), attr_name="distance_km")', "sum", "workout"),
    _ex("How many hours of music did I listen to in March 2024?",
        'SUM(l=MAP(l=FILTER(l=RETRIEVE(query="listened to music"), filter=lambda e: year(e.start) == 2024 '
        'and month(e.start) == 3), fct=lambda e: in_hours(duration(e)), res_name="hours"), attr_name="hours")',
        "sum", "map", "music"),
    _ex("How much time did I spend in meetings last week?",
        'SUM(l=MAP(l=FILTER(l=RETRIEVE(query="meeting"), filter=lambda e: e.start >= today() - days(7) '
        'and e.start < today()), fct=lambda e: in_hours(duration(e)), res_name="hours"), attr_name="hours")',
        "sum", "calendar", "relative"),
    _ex("What is the average distance of my runs?",
        'AVG(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["distance_km"], attr_types=[float]), '
        'attr_name="distance_km")', "avg", "workout"),
    _ex("How long was my average workout in 2024, in minutes?",
        'AVG(l=MAP(l=FILTER(l=RETRIEVE(query="workout"), filter=lambda e: year(e.start) == 2024), '
        'fct=lambda e: in_minutes(duration(e)), res_name="minutes"), attr_name="minutes")', "avg", "map"),
    _ex("How many steps did I walk in total in April 2023?",
        'SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="daily step count"), attr_names=["steps"], attr_types=[int]), '
        'filter=lambda e: year(e.start) == 2023 and month(e.start) == 4), attr_name="steps")', "sum", "health"),
    _ex("How many hours did I watch TV series in 2022?",
        'SUM(l=MAP(l=FILTER(l=RETRIEVE(query="watched an episode"), filter=lambda e: year(e.start) == 2022), '
        'fct=lambda e: in_hours(duration(e)), res_name="hours"), attr_name="hours")', "sum", "episode"),
    # ---- min / max / first / last -----------------------------------------------------------
    _ex("What was the most expensive thing I bought on Amazon?",
        'ARGMAX(l=EXTRACT(l=RETRIEVE(query="Amazon purchase"), attr_names=["product", "total"], '
        'attr_types=[str, float]), arg_attr_name="product", val_attr_name="total")', "argmax", "purchase"),
    _ex("What was my longest run?",
        'MAX(l=EXTRACT(l=RETRIEVE(query="running"), attr_names=["distance_km"], attr_types=[float]), '
        'attr_name="distance_km")', "max", "workout"),
    _ex("When did I last go to the cinema?",
        'MAX(l=RETRIEVE(query="cinema visit"), attr_name="start")', "max", "temporal"),
    _ex("When was the first time I listened to Radiohead?",
        'MIN(l=FILTER(l=EXTRACT(l=RETRIEVE(query="Radiohead songs"), attr_names=["artist"], attr_types=[str]), '
        'filter=lambda e: contains(e["artist"], "Radiohead")), attr_name="start")', "min", "music"),
    _ex("What was the shortest flight I took?",
        'ARGMIN(l=MAP(l=RETRIEVE(query="flight"), fct=lambda e: in_hours(duration(e)), res_name="hours"), '
        'arg_attr_name="title", val_attr_name="hours")', "argmin", "map"),
    _ex("What was the cheapest thing I ordered in 2023?",
        'ARGMIN(l=FILTER(l=EXTRACT(l=RETRIEVE(query="order"), attr_names=["product", "total"], attr_types=[str, float]), '
        'filter=lambda e: year(e.start) == 2023), arg_attr_name="product", val_attr_name="total")', "argmin", "purchase"),
    # ---- grouping and argmax over groups -----------------------------------------------------
    _ex("Which artist did I listen to most in 2023?",
        'ARGMAX(l=GROUP_BY(l=EXTRACT(l=FILTER(l=RETRIEVE(query="songs I listened to"), filter=lambda e: year(e.start) == 2023), '
        'attr_names=["artist"], attr_types=[str]), attr_names=["artist"]), arg_attr_name="artist", val_attr_name="count")',
        "argmax", "group", "music"),
    _ex("What show did I watch the most?",
        'ARGMAX(l=GROUP_BY(l=EXTRACT(l=RETRIEVE(query="watched an episode"), attr_names=["show"], attr_types=[str]), '
        'attr_names=["show"]), arg_attr_name="show", val_attr_name="count")', "argmax", "group", "episode"),
    _ex("Who did I email most often?",
        'ARGMAX(l=GROUP_BY(l=EXTRACT(l=FILTER(l=EXTRACT(l=RETRIEVE(query="mail I sent"), attr_names=["direction"], '
        'attr_types=[str]), filter=lambda e: e["direction"] == "sent"), attr_names=["to"], attr_types=[str]), '
        'attr_names=["to"]), arg_attr_name="to", val_attr_name="count")', "argmax", "group", "mail"),
    _ex("Which month did I run the most in 2023?",
        'ARGMAX(l=GROUP_BY(l=MAP(l=FILTER(l=RETRIEVE(query="running"), filter=lambda e: year(e.start) == 2023), '
        'fct=lambda e: month(e.start), res_name="month"), attr_names=["month"]), arg_attr_name="month", '
        'val_attr_name="count")', "argmax", "group", "map"),
    _ex("In which year did I go to the most concerts?",
        'ARGMAX(l=GROUP_BY(l=MAP(l=RETRIEVE(query="concert"), fct=lambda e: year(e.start), res_name="year"), '
        'attr_names=["year"]), arg_attr_name="year", val_attr_name="count")', "argmax", "group", "map", "calendar"),
    _ex("On which weekday do I usually go to the gym?",
        'ARGMAX(l=GROUP_BY(l=MAP(l=RETRIEVE(query="gym workout"), fct=lambda e: weekday_name(e.start), '
        'res_name="weekday"), attr_names=["weekday"]), arg_attr_name="weekday", val_attr_name="count")',
        "argmax", "weekday"),
    _ex("At what hour do I usually listen to podcasts?",
        'ARGMAX(l=GROUP_BY(l=MAP(l=RETRIEVE(query="podcast episode"), fct=lambda e: hour(e.start), res_name="hour"), '
        'attr_names=["hour"]), arg_attr_name="hour", val_attr_name="count")', "argmax", "hour"),
    _ex("Which cuisine do I eat most often?",
        'ARGMAX(l=GROUP_BY(l=EXTRACT(l=RETRIEVE(query="restaurant meal"), attr_names=["cuisine"], attr_types=[str]), '
        'attr_names=["cuisine"]), arg_attr_name="cuisine", val_attr_name="count")', "argmax", "food"),
    _ex("Which product category did I order most often in 2024?",
        'ARGMAX(l=GROUP_BY(l=EXTRACT(l=FILTER(l=RETRIEVE(query="purchase"), filter=lambda e: year(e.start) == 2024), '
        'attr_names=["category"], attr_types=[str]), attr_names=["category"]), arg_attr_name="category", '
        'val_attr_name="count")', "argmax", "group", "purchase"),
    _ex("How many songs did I listen to per platform?",
        'GROUP_BY(l=EXTRACT(l=RETRIEVE(query="songs I listened to"), attr_names=["platform"], attr_types=[str]), '
        'attr_names=["platform"])', "group", "music"),
    _ex("Which 5 podcasts did I listen to most in 2023?",
        'GROUP_BY(l=EXTRACT(l=FILTER(l=RETRIEVE(query="podcast episode"), filter=lambda e: year(e.start) == 2023), '
        'attr_names=["show"], attr_types=[str]), attr_names=["show"])', "group", "top", "podcast"),
    _ex("top 3 places i visited last year",
        'GROUP_BY(l=EXTRACT(l=FILTER(l=RETRIEVE(query="place I visited"), filter=lambda e: '
        'year(e.start) == year(today()) - 1), attr_names=["place"], attr_types=[str]), attr_names=["place"])',
        "group", "top", "place"),
    # "what did I eat/see/buy in <a place>": what the events there say, not the events
    _ex("Which dishes did I have while I was in Lisbon, Portugal?",
        'GROUP_BY(l=EXTRACT(l=RETRIEVE(query="ate food in Lisbon, Portugal"), attr_names=["food"], attr_types=[str]), '
        'attr_names=["food"])', "group", "food", "travel"),
    _ex("In which city did I spend the most nights in hotels?",
        'ARGMAX(l=GROUP_BY(l=EXTRACT(l=RETRIEVE(query="hotel stay"), attr_names=["city"], attr_types=[str]), '
        'attr_names=["city"]), arg_attr_name="city", val_attr_name="count")', "argmax", "travel"),
    # a chat log holds the user's turns and the assistant's: "I asked" means role "user"
    _ex("What did I ask ChatGPT about most this spring?",
        'ARGMAX(l=GROUP_BY(l=EXTRACT(l=FILTER(l=EXTRACT(l=RETRIEVE(query="question I asked a chatbot"), '
        'attr_names=["role"], attr_types=[str]), filter=lambda e: e["role"] == "user" and '
        'year(e.start) == year(today()) and month(e.start) >= 3 and month(e.start) <= 5), attr_names=["topic"], '
        'attr_types=[str]), attr_names=["topic"]), arg_attr_name="topic", val_attr_name="count")', "argmax", "chat"),
    # ---- unnest ---------------------------------------------------------------------------------
    _ex("Who did I meet most often in calendar events?",
        'ARGMAX(l=GROUP_BY(l=UNNEST(l=EXTRACT(l=RETRIEVE(query="meeting"), attr_names=["attendees"], '
        'attr_types=[str]), nested_attr_name="attendees", unnested_attr_name="person"), attr_names=["person"]), '
        'arg_attr_name="person", val_attr_name="count")', "unnest", "calendar"),
    _ex("Which tag do I use most in my journal?",
        'ARGMAX(l=GROUP_BY(l=UNNEST(l=EXTRACT(l=RETRIEVE(query="journal note"), attr_names=["tags"], attr_types=[str]), '
        'nested_attr_name="tags", unnested_attr_name="tag"), attr_names=["tag"]), arg_attr_name="tag", '
        'val_attr_name="count")', "unnest", "note"),
    _ex("How many different people did I have dinner with in 2023?",
        'APPLY(l=GROUP_BY(l=UNNEST(l=EXTRACT(l=FILTER(l=RETRIEVE(query="dinner"), filter=lambda e: '
        'year(e.start) == 2023), attr_names=["people"], attr_types=[str]), nested_attr_name="people", '
        'unnested_attr_name="person"), attr_names=["person"]), fct=len)', "unnest", "count"),
    # ---- joins by time ------------------------------------------------------------------------
    _ex("Which artist did I listen to most while cycling?",
        'ARGMAX(l=GROUP_BY(l=EXTRACT(l=JOIN(l1=RETRIEVE(query="songs I listened to"), l2=RETRIEVE(query="cycling"), '
        'condition="overlaps(i1, i2)"), attr_names=["artist"], attr_types=[str]), attr_names=["artist"]), '
        'arg_attr_name="artist", val_attr_name="count")', "join", "overlap", "argmax"),
    _ex("What podcasts do I listen to while commuting?",
        'GROUP_BY(l=EXTRACT(l=JOIN(l1=RETRIEVE(query="podcast episode"), l2=RETRIEVE(query="commute by train"), '
        'condition="overlaps(i1, i2)"), attr_names=["show"], attr_types=[str]), attr_names=["show"])', "join", "overlap"),
    _ex("How often did I have pizza after a tennis match?",
        'APPLY(l=JOIN(l1=RETRIEVE(query="tennis match"), l2=RETRIEVE(query="ate pizza"), '
        'condition="i2.start > i1.end and i2.start - i1.end < hours(6)"), fct=len)', "join", "after", "count"),
    _ex("How many times did I go for coffee on the same day as a job interview?",
        'APPLY(l=JOIN(l1=RETRIEVE(query="job interview"), l2=RETRIEVE(query="coffee"), '
        'condition="same_day(i1.start, i2.start)"), fct=len)', "join", "same_day", "count"),
    _ex("What did I order online in the week before my vacation?",
        'JOIN(l1=RETRIEVE(query="vacation trip"), l2=RETRIEVE(query="online order"), '
        'condition="i2.start < i1.start and i1.start - i2.start < days(7)")', "join", "before"),
    _ex("Which restaurant did I go to most after climbing?",
        'ARGMAX(l=GROUP_BY(l=EXTRACT(l=JOIN(l1=RETRIEVE(query="climbing"), l2=RETRIEVE(query="restaurant visit"), '
        'condition="i2.start > i1.end and i2.start - i1.end < hours(5)"), attr_names=["restaurant"], attr_types=[str]), '
        'attr_names=["restaurant"]), arg_attr_name="restaurant", val_attr_name="count")', "join", "after", "argmax"),
    _ex("How much did I spend on groceries on days I worked out?",
        'SUM(l=EXTRACT(l=JOIN(l1=RETRIEVE(query="grocery shopping"), l2=RETRIEVE(query="workout"), '
        'condition="same_day(i1.start, i2.start)"), attr_names=["total"], attr_types=[float]), attr_name="total")',
        "join", "sum"),
    _ex("Which songs did I play during my flight to Lisbon?",
        'JOIN(l1=RETRIEVE(query="flight to Lisbon"), l2=RETRIEVE(query="songs I listened to"), '
        'condition="overlaps(i1, i2)")', "join", "overlap"),
    # ---- filters, lists, temporal ----------------------------------------------------------------
    _ex("Which books did I buy in 2023?",
        'FILTER(l=RETRIEVE(query="bought a book"), filter=lambda e: year(e.start) == 2023)', "list", "purchase"),
    _ex("what did i do last weekend",
        'FILTER(l=RETRIEVE(query="activity"), filter=lambda e: e.start >= today() - days(weekday(today()) + 2) '
        'and e.start < today() - days(weekday(today())))', "list", "relative"),
    _ex("When did I watch the last episode of The Crown?",
        'MAX(l=RETRIEVE(query="watched The Crown episode"), attr_name="start")', "temporal", "episode"),
    _ex("Which concerts did I go to in the evening?",
        'FILTER(l=RETRIEVE(query="concert"), filter=lambda e: hour(e.start) >= 18)', "list", "hour"),
    _ex("What did I order from Amazon that was cancelled?",
        'FILTER(l=EXTRACT(l=RETRIEVE(query="Amazon order"), attr_names=["status"], attr_types=[str]), '
        'filter=lambda e: e["status"] == "cancelled")', "list", "purchase"),
    _ex("Which mails did I get from my landlord in 2024?",
        'FILTER(l=RETRIEVE(query="mail from my landlord"), filter=lambda e: year(e.start) == 2024)', "list", "mail"),
    _ex("Did I go hiking on Christmas 2023?",
        'FILTER(l=RETRIEVE(query="hiking"), filter=lambda e: date(e.start) == date(2023, 12, 25))', "list", "date"),
    _ex("What did I write in my journal on my birthday last year?",
        'FILTER(l=RETRIEVE(query="journal note"), filter=lambda e: year(e.start) == year(today()) - 1 '
        'and month(e.start) == 3 and day(e.start) == 14)', "list", "note"),
    _ex("Which days in August 2024 did I not sleep well?",
        'FILTER(l=EXTRACT(l=FILTER(l=RETRIEVE(query="sleep"), filter=lambda e: year(e.start) == 2024 '
        'and month(e.start) == 8), attr_names=["sleep_hours"], attr_types=[float]), filter=lambda e: e["sleep_hours"] < 6)',
        "list", "health"),
    _ex("What was the total duration of my Zoom calls yesterday in minutes?",
        'SUM(l=MAP(l=FILTER(l=RETRIEVE(query="Zoom call"), filter=lambda e: date(e.start) == today() - days(1)), '
        'fct=lambda e: in_minutes(duration(e)), res_name="minutes"), attr_name="minutes")', "sum", "relative"),
    _ex("How many nights did I stay out past midnight in 2023?",
        'APPLY(l=FILTER(l=RETRIEVE(query="night out"), filter=lambda e: year(e.start) == 2023 and e.end is not None '
        'and date(e.end) > date(e.start)), fct=len)', "count", "hour"),
    _ex("What was the most expensive dinner I had with Maria?",
        'ARGMAX(l=EXTRACT(l=RETRIEVE(query="dinner with Maria"), attr_names=["restaurant", "amount"], '
        'attr_types=[str, float]), arg_attr_name="restaurant", val_attr_name="amount")', "argmax", "food"),
    # ---- diary days: dates written 2012/05/14, who was there, how long, talking to people ---------
    # (our own phrasings: none is a TimelineQA question template, a test checks the questions)
    _ex("Was I at the gym on 2012/05/14?",
        'FILTER(l=RETRIEVE(query="went to the gym"), filter=lambda e: date(e.start) == date(2012, 5, 14))',
        "yesno", "date", "note"),
    _ex("how many minutes of gardening did I do on 2009/08/30",
        'SUM(l=EXTRACT(l=FILTER(l=RETRIEVE(query="gardening"), filter=lambda e: date(e.start) == date(2009, 8, 30)), '
        'attr_names=["minutes"], attr_types=[float]), attr_name="minutes")', "sum", "date", "note"),
    _ex("Who joined me for bowling on 2015/02/21?",
        'EXTRACT(l=FILTER(l=RETRIEVE(query="went bowling"), filter=lambda e: date(e.start) == date(2015, 2, 21)), '
        'attr_names=["people"], attr_types=[str])', "people", "date", "note"),
    _ex("which dish did I cook on 2016/04/03",
        'EXTRACT(l=FILTER(l=RETRIEVE(query="cooked dinner"), filter=lambda e: date(e.start) == date(2016, 4, 3)), '
        'attr_names=["food"], attr_types=[str])', "food", "date", "note"),
    _ex("How often did I chat with Noah during March 2012?",
        'APPLY(l=FILTER(l=RETRIEVE(query="talked to Noah"), filter=lambda e: year(e.start) == 2012 '
        'and month(e.start) == 3), fct=len)', "count", "people", "note"),
    _ex("Who did I go hiking with most often in 2019?",
        'ARGMAX(l=GROUP_BY(l=UNNEST(l=EXTRACT(l=FILTER(l=RETRIEVE(query="went hiking"), '
        'filter=lambda e: year(e.start) == 2019), attr_names=["people"], attr_types=[str]), nested_attr_name="people", '
        'unnested_attr_name="person"), attr_names=["person"]), arg_attr_name="person", val_attr_name="count")',
        "unnest", "argmax", "people", "note"),
    # ---- lookups on a day the question names without its year ------------------------
    _ex("where did I go climbing on the 9th of march?",
        'EXTRACT(l=FILTER(l=RETRIEVE(query="climbing"), filter=lambda e: month(e.start) == 3 and day(e.start) == 9), '
        'attr_names=["place"], attr_types=[str])', "lookup", "workout"),
    _ex("what was I reading on 2 november, says my journal",
        'EXTRACT(l=FILTER(l=RETRIEVE(query="journal note about reading"), filter=lambda e: month(e.start) == 11 and '
        'day(e.start) == 2), attr_names=["book"], attr_types=[str])', "lookup", "journal"),
    _ex("my physiotherapist's phone number? it's in one of her mails",
        'EXTRACT(l=RETRIEVE(query="mail from my physiotherapist"), attr_names=["phone_number"], attr_types=[str])',
        "lookup", "mail"),
    # ---- comparisons: the compared values grouped, the larger group wins -------------
    _ex("who did I play squash with more, Jonas or Priya?",
        'ARGMAX(l=GROUP_BY(l=FILTER(l=UNNEST(l=EXTRACT(l=RETRIEVE(query="played squash"), attr_names=["people"], '
        'attr_types=[str]), nested_attr_name="people", unnested_attr_name="person"), filter=lambda e: '
        'contains(e["person"], "Jonas") or contains(e["person"], "Priya")), attr_names=["person"]), '
        'arg_attr_name="person", val_attr_name="count")', "comparison", "people"),
    _ex("did i go bouldering more often in 2022 or in 2023",
        'ARGMAX(l=GROUP_BY(l=MAP(l=FILTER(l=RETRIEVE(query="bouldering"), filter=lambda e: year(e.start) == 2022 or '
        'year(e.start) == 2023), fct=lambda e: year(e.start), res_name="year"), attr_names=["year"]), '
        'arg_attr_name="year", val_attr_name="count")', "comparison", "workout"),
    # ---- sums compared: a signed sum, or each group's rows summed by name ---------------
    _ex("how much more did I spend at the supermarket in 2024 than in 2023?",
        'SUM(l=MAP(l=EXTRACT(l=FILTER(l=RETRIEVE(query="supermarket purchase"), filter=lambda e: year(e.start) in '
        '[2023, 2024]), attr_names=["amount"], attr_types=[float]), fct=lambda e: e["amount"] if year(e.start) == 2024 '
        'else -e["amount"], res_name="difference"), attr_name="difference")', "comparison", "purchase"),
    _ex("Which month of 2023 did I cycle the furthest?",
        'ARGMAX(l=MAP(l=GROUP_BY(l=MAP(l=EXTRACT(l=FILTER(l=RETRIEVE(query="cycling"), filter=lambda e: '
        'year(e.start) == 2023), attr_names=["distance_km"], attr_types=[float]), fct=lambda e: month(e.start), '
        'res_name="month"), attr_names=["month"]), fct=lambda e: sum(e.group["distance_km"]), res_name="total"), '
        'arg_attr_name="month", val_attr_name="total")', "argmax", "workout"),
    # ---- the first or last of one thing after or before another ---------------------
    _ex("what was the first film I watched after getting back from Oslo?",
        'ARGMIN(l=JOIN(l1=RETRIEVE(query="watched a movie"), l2=RETRIEVE(query="trip to Oslo"), '
        'condition="i1.start > i2.end"), arg_attr_name="title", val_attr_name="start")', "first_last", "join"),
    _ex("when did I last email my landlord before I moved out?",
        'MAX(l=JOIN(l1=RETRIEVE(query="mail to my landlord"), l2=RETRIEVE(query="moving out"), '
        'condition="i1.start < i2.start"), attr_name="start")', "first_last", "join"),
    # ---- follow-ups (previous question | follow-up) ------------------------------------------------
    _ex("How many times did I go swimming in 2023? | and in 2022?",
        'APPLY(l=FILTER(l=RETRIEVE(query="swimming"), filter=lambda e: year(e.start) == 2022), fct=len)',
        "followup", "count"),
    _ex("What did I spend on Amazon in 2023? | what about books only?",
        'SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="Amazon purchase of a book"), attr_names=["total"], attr_types=[float]), '
        'filter=lambda e: year(e.start) == 2023), attr_name="total")', "followup", "sum"),
    _ex("Which artist did I listen to most in 2023? | and in the evenings?",
        'ARGMAX(l=GROUP_BY(l=EXTRACT(l=FILTER(l=RETRIEVE(query="songs I listened to"), filter=lambda e: year(e.start) == 2023 '
        'and hour(e.start) >= 18), attr_names=["artist"], attr_types=[str]), attr_names=["artist"]), '
        'arg_attr_name="artist", val_attr_name="count")', "followup", "argmax"),
)
