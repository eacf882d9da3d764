"""Synthetic personas for benchmarks, the demo and model training (PerQA-style).

A persona is a simulated life of a few years: friends, family, hobbies, tastes and
trips, played out day by day into *canonical facts* (one row per real-world fact)
and then written out as the real export files the importers read (Spotify, Netflix,
Gmail mbox, Google Calendar .ics, Amazon, Apple Health, Strava, Markdown journal,
ChatGPT). Questions with gold answers are computed by SQL over the canonical facts.

Modules: ``world`` (persona specs and their entities), ``simulate`` (days into
facts), ``verbalize`` (sentences that express facts), ``exports`` (export writers),
``canonical`` (the canonical table and its DuckDB view), ``questions`` (templates,
splits, gold SQL), ``personas`` (the public entry points) and ``timelineqa`` (the
TimelineQA life shipped in shared data).

Nothing here touches the event store or the importers: the benchmark imports the
written files through the ordinary pipeline, exactly as a user would.
"""
from synth.personas import Manifest, generate, list_personas, write_demo

__all__ = ["Manifest", "generate", "list_personas", "write_demo"]
