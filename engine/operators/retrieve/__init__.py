"""RETRIEVE, as ReQAP's pipeline, tuned for recall:

1. candidates from full-text search (BM25) and the SparseEncoder over verbalised
   key-value documents (``engine.retrieval.index``; :mod:`.candidates`);
2. the PatternClassifier labels one pattern per (source, kind) in the store
   (``engine.retrieval.patterns``; :mod:`.groups`, :mod:`.labelling`, :mod:`.labels`):
   a relevant group is kept *whole, from the store* (every Spotify play for "songs
   I listened to", not only those the search found), an irrelevant one dropped
   unless its best search hits pass the reranker and (but for a query naming
   someone) are near the query for the Embedder. The Embedder checks the
   classifier's "relevant" against siblings: a kind far below another kind of the
   same source ("music_stream" beside "podcast_stream" for "podcast episode"), a
   group whose values it tells apart ("activity: yoga" well above "activity:
   running" for "yoga class"), or a group whose shared value lies well below
   another source's ("activity: Run" on every Strava workout) is judged as a
   partial group instead. A query that names a kind of event ("calendar event",
   "played a song") asks for all of it and for no other (:mod:`.kinds`);
3. inside each partial group, categorical value patterns (``sport: running`` among
   workouts) mined from the group's candidates and a sample of the group are
   labelled the same way: relevant ones bring all their events from the store,
   irrelevant ones drop their candidates (relevant wins, for recall); a relevant
   value pattern far from the query in the Embedder's space is only partial
   (:mod:`.values`);
4. with sentence vectors in the index (:mod:`engine.retrieval.vectors`), an event of
   a partial group with a sentence as near the query as the nearest events' are
   (cosine >= ``accept_similarity`` and within ``accept_band`` of the nearest) is kept
   without the reranker, whether the search found it or not: the reranker, trained
   here in minutes, passed no diary day that says "Went for a 7.9 km run" for "running".
   Not when the query names someone or something (an embedder knows names by
   spelling; :mod:`.acceptance`);
5. the Reranker classifies the candidates no pattern decided (:mod:`.reranking`); with
   an Embedder, the passage that made a candidate pass must also be near the query in
   its space (the pretrained embedder generalises where the reranker, trained here on
   synthetic lives, does not: it scored a calendar's football games 0.67 for "Amazon
   purchase"). When the index keeps its passages' vectors (:mod:`engine.retrieval.vectors`),
   a candidate none of whose passages is that near is never reranked: it could not
   pass. For a query that names someone or something (:mod:`.names`), a candidate that
   passes must say a word of one of the names (the reranker passed "I went grocery
   shopping with Jack." for "go to the grocery store with Chloe"), and pass the
   reranker for the query without its names too, where that says more than the kind
   of event (given "Chloe", it passed her dates for "go get groceries with Chloe"),
   near that fragment in the embedder's space unless the reranker is sure of it (a
   fragment embeds as noise: "trip to" put a calendar's "✈ Mexico City" at 0.16).
   A query that says every word of a title the store's events share names that
   thing in any case ("weekly team meeting", the calendar's "Team weekly"): what
   passes must say those words too (:mod:`.titles`).
   What is kept by a sentence or by the reranker names no other meal than the query
   (:func:`~engine.retrieval.words.contradicts`: a dinner is no lunch). Events that
   say the same but for their dates and numbers are judged by their majority
   (:mod:`.alike`: a weekly meeting is no trip in July only). For a
   query that says only names and kinds ("songs by Louise Cooper"), a value of the
   judged candidates that is a name it gives ("artist: Louise Cooper") brings all its
   events from the store when the reranker passed most of its candidates
   (:mod:`.named_values`): the search's best hits span every year. With
   ``rerank_window`` set, a RETRIEVE right under a FILTER that reads only times has
   the part of a big group the filter can keep judged whole (October 2005's diary
   days, not the best search hits of every year); so has, with ``day_window``, the
   RETRIEVE on the right of a same-day JOIN the days of the left side's rows (the
   meals of the days a tower was visited);
6. events from different sources whose time spans mostly coincide are merged into one
   row (union of key-value pairs and spans; provenance = both ids; :mod:`.merging`),
   as are a purchase and the mails with its order number, and a trip and the mail
   that gives its first and last day;
7. a day's note that states the measure of its day's one kept happening ("Did 8.5 km in
   Textor Park" and an 8.5 km run) joins that row, kept or not (:mod:`.mentions`).

:mod:`.pipeline` runs the stages in this order; :mod:`.memo` keeps what a search
found for the next question that makes it; :mod:`.events` reads the events and
:mod:`.scores` asks the models. The English words it reads queries by are
:mod:`engine.locale_en`'s.

This package reads the store and the index; it never writes the store.
"""
from __future__ import annotations

from engine.operators.retrieve.events import Event, fetch_events, local
from engine.operators.retrieve.groups import universal_items
from engine.operators.retrieve.kinds import names_the_kind, of_the_kind_named
from engine.operators.retrieve.labels import Label, Verdict
from engine.operators.retrieve.merging import MERGED_TEXTS, merge_overlapping
from engine.operators.retrieve.names import names, names_something, says_a_name, without_names
from engine.operators.retrieve.pipeline import retrieve
from engine.operators.retrieve.scores import best_passages, score_events, similarities

__all__ = ["MERGED_TEXTS", "Event", "Label", "Verdict", "best_passages", "fetch_events", "local",
           "merge_overlapping", "names", "names_something", "names_the_kind", "of_the_kind_named",
           "retrieve", "says_a_name", "score_events", "similarities", "universal_items", "without_names"]
