"""The plan language: hand-written plans parse, print canonically and re-parse to
the same tree; the generated GBNF is valid for llama.cpp; strings the grammar
generates are plans the parser accepts, and canonical plans are in the grammar;
the validator reports what an operator reads that nothing produces."""
from __future__ import annotations

import random
import re
import struct

import pytest

from engine.plan import PlanSyntaxError, parse_plan, print_plan, validate_plan
from engine.plan import expr as X
from engine.plan import grammar as G
from engine.plan.nodes import ArgMax, Filter, GroupBy, Retrieve

HAND_PLANS = [
    'RETRIEVE(query="songs I listened to")',
    'QUD("Which artist did I listen to most while running?")',
    'ARGMAX(l=GROUP_BY(l=EXTRACT(l=JOIN(l1=RETRIEVE(query="music I listened to"), '
    'l2=RETRIEVE(query="running workouts"), condition="overlaps(i1, i2)"), attr_names=["artist"], '
    'attr_types=[str]), attr_names=["artist"]), arg_attr_name="artist", val_attr_name="count")',
    'APPLY(l=FILTER(l=RETRIEVE(query="runs"), filter=lambda x: x.start.hour >= 18 and '
    'x.start.weekday() in [0, 1]), fct=len)',
    'SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="food orders"), attr_names=["amount", "date"], '
    'attr_types=[float, date]), filter=lambda e: year(e["date"]) == year(today()) - 1), attr_name="amount")',
    'JOIN(l1=RETRIEVE(query="flights"), l2=RETRIEVE(query="hotel bookings"), '
    'condition="i1.end <= i2.start and i2.start <= i1.end + hours(6)")',
    'JOIN(l1=EXTRACT(l=RETRIEVE(query="concerts"), attr_names=["artist"], attr_types=[str]), '
    'l2=EXTRACT(l=RETRIEVE(query="songs"), attr_names=["artist"], attr_types=[str]), '
    'condition="i1[\'artist\'] == i2[\'artist\'] and same_day(i1.start, i2.start)")',
    'MAP(l=RETRIEVE(query="workouts"), fct=lambda e: in_minutes(duration(e)) if e.end is not None else None, '
    'res_name="minutes")',
    'UNNEST(l=GROUP_BY(l=RETRIEVE(query="mails"), attr_names=["source"]), nested_attr_name="group", '
    'unnested_attr_name="mail")',
    'AVG(l=MAP(l=RETRIEVE(query="x"), fct=lambda e: -e.count * (2 - 3) // 4 % 5 / 1.5, res_name="v"), '
    'attr_name="v")',
    'FILTER(l=RETRIEVE(query="say \\"hi\\"\\n"), filter=lambda e: not (contains(e.title, "a") or '
    'e.text.lower().startswith("b")) and e.source != "mail")',
    'APPLY(l=RETRIEVE(query="x"), fct=lambda l: len(l) > 3)',
    'ARGMIN(l=QUD("how long was each run?"), arg_attr_name="start", val_attr_name="minutes")',
]


@pytest.mark.parametrize("text", HAND_PLANS)
def test_hand_plans_round_trip(text):
    plan = parse_plan(text)
    printed = print_plan(plan)
    assert parse_plan(printed) == plan
    assert print_plan(parse_plan(printed)) == printed  # the printer is canonical: a fixed point


@pytest.mark.parametrize("text", HAND_PLANS)
def test_positional_spelling_is_the_same_plan(text):
    plan = parse_plan(text)
    short = print_plan(plan, positional=True)
    assert not re.search(r"\b(l|l1|l2|query)=", short)
    assert parse_plan(short) == plan
    assert len(short) < len(print_plan(plan)) or text.startswith("QUD(")


def test_positional_and_named_arguments_mix_as_in_python():
    assert parse_plan('FILTER(RETRIEVE("runs"), filter=lambda e: True)') == \
        parse_plan('FILTER(l=RETRIEVE(query="runs"), filter=lambda e: True)')


def test_parse_builds_typed_nodes():
    plan = parse_plan(HAND_PLANS[2])
    assert isinstance(plan, ArgMax) and isinstance(plan.l, GroupBy)
    assert plan.l.attr_names == ("artist",)
    f = parse_plan('FILTER(l=RETRIEVE(query="q"), filter=lambda row: row["artist"] == "Muse")')
    assert isinstance(f, Filter) and isinstance(f.l, Retrieve)
    # parameter renamed to the canonical e; e["x"] and e.x are the same read
    assert f.filter == parse_plan('FILTER(l=RETRIEVE(query="q"), filter=lambda e: e.artist == "Muse")').filter
    assert X.attributes_read(f.filter.body, "e") == {"artist"}


def test_equal_plans_hash_equal():
    assert hash(parse_plan(HAND_PLANS[2])) == hash(parse_plan(HAND_PLANS[2]))


def test_printer_quotes_strings_inside_conditions():
    plan = parse_plan('JOIN(l1=RETRIEVE(query="a"), l2=RETRIEVE(query="b"), '
                      'condition="i1.title == \'it\\\\\'s\' and i2.kind == \'x\'")')
    assert parse_plan(print_plan(plan)) == plan


# ---- grammar ------------------------------------------------------------------------
def _recognizer(g: G.Grammar):
    """All end positions where ``sym`` can match ``text`` from ``pos``."""
    def run(text: str) -> bool:
        memo: dict[tuple[int, int], frozenset[int]] = {}

        def m(sym, pos: int) -> frozenset[int]:
            key = (id(sym), pos)
            if key in memo:
                return memo[key]
            memo[key] = frozenset()  # no left recursion in this grammar; guard anyway
            if isinstance(sym, G.Lit):
                out = frozenset({pos + len(sym.text)}) if text.startswith(sym.text, pos) else frozenset()
            elif isinstance(sym, G.Ref):
                out = m(g.rules[sym.name], pos)
            elif isinstance(sym, G.Chars):
                out = frozenset({pos + 1}) if pos < len(text) and _in_class(sym.gbnf, text[pos]) else frozenset()
            elif isinstance(sym, G.Seq):
                cur = frozenset({pos})
                for item in sym.items:
                    cur = frozenset().union(*(m(item, p) for p in cur)) if cur else cur
                out = cur
            elif isinstance(sym, G.Alt):
                out = frozenset().union(*(m(i, pos) for i in sym.items))
            elif isinstance(sym, G.Rep):
                out, frontier, n = set(), {pos}, 0
                if sym.lo == 0:
                    out.add(pos)
                while frontier and (sym.hi is None or n < sym.hi):
                    frontier = set().union(*(m(sym.item, p) for p in frontier)) - {p for p in frontier}
                    n += 1
                    if n >= sym.lo:
                        out |= frontier
                out = frozenset(out)
            else:
                raise TypeError(sym)
            memo[key] = out
            return out
        return len(text) in m(g.rules[g.root], 0)
    return run


def _in_class(gbnf: str, ch: str) -> bool:
    # the few classes the generator writes
    if gbnf == "[0-9]":
        return ch.isdigit() and ch.isascii()
    if gbnf == "[1-9]":
        return ch in "123456789"
    if gbnf == '["\\\\nt]':
        return ch in '"\\nt'
    if gbnf.startswith("[^"):
        forbidden = {'"', "\\"} | ({"'"} if "'" in gbnf else set()) | ({"_"} if "_" in gbnf else set())
        return ch not in forbidden and ord(ch) >= 0x20
    raise AssertionError(f"unexpected class {gbnf}")


def _sample(g: G.Grammar, rng: random.Random) -> str:
    limits = {"plan": 4, "x-expr": 2, "y-expr": 2, "c-expr": 2, "refs": 40}
    depth = dict.fromkeys(limits, 0)

    def deep() -> bool:
        return any(depth[k] >= limits[k] for k in limits)

    def ex(sym) -> str:
        if isinstance(sym, G.Lit):
            return sym.text
        if isinstance(sym, G.Ref):
            names = ("refs", sym.name) if sym.name in depth else ("refs",)
            for n in names:
                depth[n] += 1
            try:
                return ex(g.rules[sym.name])
            finally:
                for n in names:
                    depth[n] -= 1
        if isinstance(sym, G.Chars):
            return rng.choice(sym.examples)
        if isinstance(sym, G.Seq):
            return "".join(ex(i) for i in sym.items)
        if isinstance(sym, G.Alt):
            return ex(sym.items[0] if deep() else rng.choice(sym.items))
        if isinstance(sym, G.Rep):
            hi = sym.lo + 2 if sym.hi is None else min(sym.hi, sym.lo + 2)
            n = sym.lo if deep() else rng.randint(sym.lo, hi)
            return "".join(ex(sym.item) for _ in range(n))
        raise TypeError(sym)
    return ex(g.rules[g.root])


@pytest.mark.parametrize("positional", [False, True])
def test_grammar_samples_are_plans_the_parser_accepts(positional):
    g = G.build_grammar(positional=positional)
    rng = random.Random(7)
    for _ in range(300):
        text = _sample(g, rng)
        try:
            plan = parse_plan(text)
        except PlanSyntaxError as exc:
            pytest.fail(f"the grammar produced a plan the parser rejects:\n{text}\n{exc}")
        assert parse_plan(print_plan(plan)) == plan


@pytest.mark.parametrize("text", HAND_PLANS)
def test_canonical_plans_are_in_the_grammar(text):
    accepts = _recognizer(G.build_grammar())
    assert accepts(print_plan(parse_plan(text)))
    short = _recognizer(G.build_grammar(positional=True))
    assert short(print_plan(parse_plan(text), positional=True))
    if not text.startswith("QUD("):
        assert not short(print_plan(parse_plan(text)))  # one spelling per grammar


def test_grammar_rejects_what_the_parser_rejects():
    accepts = _recognizer(G.build_grammar())
    assert not accepts('RETRIEVE(query="x")  ')
    assert not accepts('FILTER(l=RETRIEVE(query="x"), filter=lambda e: e.__class__)')
    assert not accepts('FILTER(l=RETRIEVE(query="x"), filter=lambda e: open("f"))')
    assert not accepts('APPLY(l=RETRIEVE(query="x"), fct=print)')
    assert not accepts('FILTER(l=RETRIEVE(query="x"), filter=lambda e: today(1))')  # arity


def _vocab_only_gguf(path) -> None:
    """A GGUF file with hyper-parameters and an empty vocabulary: enough for
    llama.cpp to parse a grammar without any model weights."""
    def key(k: str) -> bytes:
        return struct.pack("<Q", len(k)) + k.encode()

    def s(k: str, v: str) -> bytes:
        return key(k) + struct.pack("<I", 8) + struct.pack("<Q", len(v.encode())) + v.encode()

    def u32(k: str, v: int) -> bytes:
        return key(k) + struct.pack("<II", 4, v)

    def f32(k: str, v: float) -> bytes:
        return key(k) + struct.pack("<If", 6, v)

    kvs = [s("general.architecture", "llama"), u32("llama.context_length", 64), u32("llama.embedding_length", 8),
           u32("llama.block_count", 1), u32("llama.feed_forward_length", 8), u32("llama.attention.head_count", 1),
           f32("llama.attention.layer_norm_rms_epsilon", 1e-5), s("tokenizer.ggml.model", "none")]
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kvs)) + b"".join(kvs))


@pytest.fixture(scope="module")
def llama_vocab(tmp_path_factory):
    llama_cpp = pytest.importorskip("llama_cpp")
    path = tmp_path_factory.mktemp("gguf") / "vocab-only.gguf"
    _vocab_only_gguf(path)
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    model = llama_cpp.llama_model_load_from_file(str(path).encode(), params)
    assert model, "llama.cpp could not load the vocab-only GGUF"
    yield llama_cpp, llama_cpp.llama_model_get_vocab(model)
    llama_cpp.llama_model_free(model)


def _gbnf_ok(llama_vocab, text: str) -> bool:
    llama_cpp, vocab = llama_vocab
    sampler = llama_cpp.llama_sampler_init_grammar(vocab, text.encode(), b"root")
    if not sampler:
        return False
    llama_cpp.llama_sampler_free(sampler)
    return True


def test_step_grammar_emits_one_operator_over_sub_questions():
    g = G.build_grammar(step=True)
    accepts = _recognizer(g)
    assert accepts('SUM(l=QUD("my food orders with their amounts"), attr_name="amount")')
    assert accepts('JOIN(l1=RETRIEVE(query="runs"), l2=QUD("songs I played"), condition="overlaps(i1, i2)")')
    assert not accepts('SUM(l=FILTER(l=RETRIEVE(query="x"), filter=lambda e: True), attr_name="a")')
    assert not accepts('QUD("just a question")')
    rng = random.Random(11)
    for _ in range(100):
        parse_plan(_sample(g, rng))


def test_gbnf_is_valid_for_llama_cpp(llama_vocab):
    grammar = G.plan_grammar()
    # LlamaGrammar.from_string only stores the text in llama-cpp-python 0.3.36; the
    # grammar sampler is where llama.cpp's own GBNF parser runs
    assert llama_vocab[0].LlamaGrammar.from_string(grammar, verbose=False) is not None
    assert _gbnf_ok(llama_vocab, grammar)
    assert _gbnf_ok(llama_vocab, G.step_grammar())
    assert _gbnf_ok(llama_vocab, G.plan_grammar(positional=True))
    # the check can fail: a broken grammar is refused
    assert not _gbnf_ok(llama_vocab, grammar.replace("x-expr ::=", "x-expression ::=", 1))


# ---- validation ---------------------------------------------------------------------
def test_validation_reports_attributes_nothing_produces():
    plan = parse_plan('ARGMAX(l=GROUP_BY(l=RETRIEVE(query="music"), attr_names=["artist"]), '
                      'arg_attr_name="artist", val_attr_name="count")')
    problems = validate_plan(plan)
    assert len(problems) == 1
    p = problems[0]
    assert p.operator == "GROUP_BY" and p.path == "0.l"
    assert "'artist'" in p.message and "EXTRACT" in p.message


@pytest.mark.parametrize("text", [HAND_PLANS[2], HAND_PLANS[3], HAND_PLANS[4], HAND_PLANS[5], HAND_PLANS[8]])
def test_valid_plans_have_no_problems(text):
    assert validate_plan(parse_plan(text)) == []


def test_validation_of_lambdas_conditions_and_shapes():
    bad_filter = parse_plan('FILTER(l=RETRIEVE(query="x"), filter=lambda e: e.price > 3)')
    assert "'price'" in validate_plan(bad_filter)[0].message
    bad_join = parse_plan('JOIN(l1=RETRIEVE(query="a"), l2=GROUP_BY(l=RETRIEVE(query="b"), attr_names=["kind"]), '
                          'condition="overlaps(i1, i2)")')
    msgs = [str(p) for p in validate_plan(bad_join)]
    assert any("i2" in m and "'start'" in m for m in msgs)
    scalar_in = parse_plan('FILTER(l=SUM(l=RETRIEVE(query="a"), attr_name="start"), filter=lambda e: True)')
    assert any("single value" in p.message for p in validate_plan(scalar_in))
    mismatched = parse_plan('EXTRACT(l=RETRIEVE(query="a"), attr_names=["a", "b"], attr_types=[str])')
    assert any("attr_types" in p.message for p in validate_plan(mismatched))


def test_adding_up_an_attribute_extracted_as_text_is_a_problem():
    counted_wrong = parse_plan('SUM(l=FILTER(l=EXTRACT(l=RETRIEVE(query="question I asked a chatbot"), '
                               'attr_names=["role"], attr_types=[str]), filter=lambda e: year(e.start) == 2023), '
                               'attr_name="role")')
    [problem] = validate_plan(counted_wrong)
    assert problem.operator == "SUM" and "'role'" in problem.message and "APPLY" in problem.message
    # text through GROUP_BY and UNNEST stays text; a MAP or a numeric EXTRACT of the name is a number
    assert validate_plan(parse_plan(
        'AVG(l=GROUP_BY(l=EXTRACT(l=RETRIEVE(query="a"), attr_names=["who"], attr_types=[str]), '
        'attr_names=["who"]), attr_name="who")'))
    assert validate_plan(parse_plan(
        'SUM(l=UNNEST(l=EXTRACT(l=RETRIEVE(query="a"), attr_names=["tags"], attr_types=[str]), '
        'nested_attr_name="tags", unnested_attr_name="tag"), attr_name="tag")'))
    assert not validate_plan(parse_plan(
        'SUM(l=MAP(l=EXTRACT(l=RETRIEVE(query="a"), attr_names=["price"], attr_types=[str]), '
        'fct=lambda e: float(e["price"]), res_name="price"), attr_name="price")'))
    assert not validate_plan(parse_plan(
        'SUM(l=EXTRACT(l=RETRIEVE(query="a"), attr_names=["price"], attr_types=[float]), attr_name="price")'))
    assert not validate_plan(parse_plan(
        'MAX(l=EXTRACT(l=RETRIEVE(query="a"), attr_names=["name"], attr_types=[str]), attr_name="name")'))


def test_qud_is_fine_while_planning_but_not_executable():
    plan = parse_plan('SUM(l=QUD("my food orders with amounts"), attr_name="amount")')
    assert validate_plan(plan, executable=False) == []
    assert "not decomposed" in validate_plan(plan)[0].message


def test_a_part_of_a_lambda_that_reads_no_variable_is_computed_once_per_context(monkeypatch):
    from datetime import date, datetime, timezone

    calls: list[str] = []
    impl = dict(X._IMPL)
    monkeypatch.setitem(X._IMPL, "days", lambda ctx, n: (calls.append("days"), impl["days"](ctx, n))[1])
    monkeypatch.setitem(X._IMPL, "month", lambda ctx, x: (calls.append("month"), impl["month"](ctx, x))[1])
    plan = parse_plan('FILTER(l=RETRIEVE(query="songs"), filter=lambda e: month(e.start) == month(today() - days(30)))')
    fn = plan.filter
    starts = [datetime(2024, m, 3, 12, tzinfo=timezone.utc) for m in (1, 2, 3, 2, 2)]
    ctx = X.EvalContext(date(2024, 3, 15))  # 30 days before: 14 February
    got = [X.call_lambda(fn, ({"start": s},), ctx) for s in starts]
    assert got == [False, True, False, True, True]
    # days(30) and the month of the day 30 days ago once; the month of each start five times
    assert calls.count("days") == 1 and calls.count("month") == 5 + 1
    # another day is another context: computed again, and right for it
    assert X.call_lambda(fn, ({"start": starts[0]},), X.EvalContext(date(2024, 1, 31))) is True
    assert calls.count("days") == 2


@pytest.mark.parametrize("condition, span", [
    ("year(e.start) == year(today()) - 1", ("2022-12-31", "2024-01-02")),
    ('year(e.start) == 2023 and month(e.start) == 12 and e["artist"] == "X"', ("2023-11-30", "2024-01-02")),
    ("e.start >= today() - days(7)", ("2024-03-07", None)),
    ("today() - days(7) <= e.start", ("2024-03-07", None)),
    ("e.start >= date(2024, 1, 1) and e.start < date(2024, 2, 1)", ("2023-12-31", "2024-02-03")),
    ("date(e.start) == date(2024, 3, 1)", ("2024-02-29", "2024-03-03")),
    ("2022 <= year(e.start)", ("2021-12-31", None)),
    ("year(e.start) < 2020", (None, "2020-01-02")),
    # a month of every year, in local time
    ("month(e.start) == month(today() - days(30))", (None, None, 2)),
    # no span: a choice of years, a condition on something else
    ("year(e.start) == 2021 or year(e.start) == 2022", None),
    ('e["artist"] == "X"', None),
    ("e.end >= today()", None),
])
def test_the_span_a_filter_lets_events_start_in_is_read_off_its_condition(condition, span):
    from datetime import date, datetime

    from engine.plan.timerange import start_span

    plan = parse_plan(f'FILTER(l=RETRIEVE(query="x"), filter=lambda e: {condition})')
    got = start_span(plan.filter, X.EvalContext(date(2024, 3, 15)))
    if span is not None and len(span) == 2:
        span = (*span, None)
    want = None if span is None else tuple(d if not isinstance(d, str) else datetime.fromisoformat(d) for d in span)
    assert got == want


@pytest.mark.parametrize("condition, value, kept", [
    ('e["product"] == "yoga mat"', "Harrell yoga mat", True),
    ('e["product"] == "yoga mat"', "Yoga", False),  # the value must say every word
    ('e["product"] == "mat"', "Matcha tea", False),  # whole words
    ('e["sport"] == "football"', "Football", True),
    ('"football" == e["sport"]', "Football", True),
    ('e["sport"] != "football"', "Football", False),
    ('e["sport"] != "football"', "Running", True),
    ('e["people"] == "Tyler"', ["Milka Klemt", "Tyler Johnson"], True),
    ('e["people"] == "Tyler"', ["Milka Klemt"], False),
    ('e["n"] == 3', 3, True),
    ('e["product"] == "yoga mat"', None, False),
    ('e["product"] != "yoga mat"', None, False),
])
def test_a_text_the_plan_writes_is_equal_to_a_value_that_says_it(condition, value, kept):
    fn = parse_plan(f'FILTER(l=RETRIEVE(query="x"), filter=lambda e: {condition})').filter
    from datetime import date
    row = {"product": value, "sport": value, "people": value, "n": value}
    assert X.call_lambda(fn, (row,), X.EvalContext(date(2024, 3, 15))) is kept
