"""The GBNF grammar for llama.cpp, generated from ``engine.plan.spec``.

Constrained by it, the planner can only write plans the parser accepts: operators
and parameters in spec order with the printer's spelling, whitelisted functions and
methods, bounded strings and numbers, lambda bodies over ``e`` (rows) or ``l``
(lists) and JOIN conditions over ``i1``/``i2``. Attribute names outside the known
set are read as ``e["name"]``, so no Python keyword can appear after a dot.

The grammar is kept as a small rule structure (:class:`Grammar`) and rendered to
GBNF text, so tests can expand it into sample plans. This module must not load
llama.cpp or any model.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache

from engine.plan.spec import (DOT_ATTRIBUTES, FUNCTIONS, LIST_FUNCTIONS, LIST_PARAM, MAX_INT_DIGITS,
                              MAX_LIST_ITEMS, METHODS, OPERATORS, QUD, ROW_PARAM, TYPE_NAMES, ParamKind)

MAX_GRAMMAR_STRING = 200


# ---- rule structure -----------------------------------------------------------------
class Sym:
    __slots__ = ()


@dataclass(frozen=True)
class Lit(Sym):
    text: str


@dataclass(frozen=True)
class Ref(Sym):
    name: str


@dataclass(frozen=True)
class Chars(Sym):
    gbnf: str      # a character class as GBNF writes it, e.g. [a-z]
    examples: str  # characters it matches, for expanding samples


@dataclass(frozen=True)
class Seq(Sym):
    items: tuple[Sym, ...]


@dataclass(frozen=True)
class Alt(Sym):
    items: tuple[Sym, ...]  # the first alternative is the shortest way out (samplers rely on it)


@dataclass(frozen=True)
class Rep(Sym):
    item: Sym
    lo: int
    hi: int | None


@dataclass
class Grammar:
    rules: dict[str, Sym] = field(default_factory=dict)
    root: str = "root"

    def to_gbnf(self) -> str:
        return "\n".join(f"{name} ::= {_render(sym, top=True)}" for name, sym in self.rules.items()) + "\n"


def _render(sym: Sym, top: bool = False) -> str:
    if isinstance(sym, Lit):
        return json.dumps(sym.text, ensure_ascii=False)
    if isinstance(sym, Ref):
        return sym.name
    if isinstance(sym, Chars):
        return sym.gbnf
    if isinstance(sym, Seq):
        body = " ".join(_render(i) for i in sym.items)
        return body if top or len(sym.items) == 1 else f"({body})"
    if isinstance(sym, Alt):
        body = " | ".join(_render(i, top=True) for i in sym.items)
        return body if top else f"({body})"
    if isinstance(sym, Rep):
        inner = _render(sym.item)
        if not isinstance(sym.item, (Lit, Ref, Chars)) and not inner.startswith("("):
            inner = f"({inner})"
        if (sym.lo, sym.hi) == (0, None):
            return inner + "*"
        if (sym.lo, sym.hi) == (1, None):
            return inner + "+"
        if (sym.lo, sym.hi) == (0, 1):
            return inner + "?"
        return inner + "{" + f"{sym.lo},{'' if sym.hi is None else sym.hi}" + "}"
    raise TypeError(sym)


def _seq(*items: Sym | str) -> Seq:
    return Seq(tuple(Lit(i) if isinstance(i, str) else i for i in items))


def _alts(*words: str) -> Alt:
    # longest first where one word is a prefix of another ("in" / "int"), so the
    # rendered grammar reads naturally; GBNF itself does not need the order
    return Alt(tuple(Lit(w) for w in words))


# ---- the grammar ----------------------------------------------------------------------
def _expression_rules(g: Grammar, p: str, variables: tuple[str, ...], string_rule: str) -> None:
    """Rules ``{p}-expr`` ... for one expression context."""
    r = lambda name: Ref(f"{p}-{name}")  # noqa: E731
    g.rules[f"{p}-expr"] = Seq((r("or"), Rep(_seq(" if ", r("or"), " else ", r("expr")), 0, 1)))
    g.rules[f"{p}-or"] = Seq((r("and"), Rep(_seq(" or ", r("and")), 0, None)))
    g.rules[f"{p}-and"] = Seq((r("not"), Rep(_seq(" and ", r("not")), 0, None)))
    g.rules[f"{p}-not"] = Alt((r("cmp"), _seq("not ", r("not"))))
    g.rules[f"{p}-cmp"] = Seq((r("sum"), Rep(Alt((
        _seq(" ", Ref("cmpop"), " ", r("sum")),
        # the parser allows 'is' only against None
        Lit(" is None"), Lit(" is not None"),
    )), 0, None)))
    g.rules[f"{p}-sum"] = Seq((r("term"), Rep(Seq((_alts(" + ", " - "), r("term"))), 0, None)))
    g.rules[f"{p}-term"] = Seq((r("unary"), Rep(Seq((_alts(" * ", " // ", " / ", " % "), r("unary"))), 0, None)))
    g.rules[f"{p}-unary"] = Alt((r("postfix"), _seq("-", r("unary"))))
    # no trailers after a bare number: Python reads "0.day" as the float "0." then a name
    g.rules[f"{p}-postfix"] = Alt((Ref("number"), Seq((r("atom"), Rep(Alt((
        _seq(".", Ref("known-attr")),
        _seq("[", Ref(f"{string_rule}-key"), "]"),
        _seq("[", Ref("int"), "]"),
        r("method-call"),
    )), 0, None)))))
    g.rules[f"{p}-atom"] = Alt((
        _alts(*variables), Ref(string_rule), _alts("True", "False", "None"),
        r("call"),
        _seq("(", r("expr"), ")"),
        _seq("[", Rep(Seq((r("expr"), Rep(_seq(", ", r("expr")), 0, MAX_LIST_ITEMS - 1))), 0, 1), "]"),
    ))

    def args(n: int) -> list[Sym]:
        out: list[Sym] = []
        for i in range(n):
            out += [Lit(", ") if i else Lit(""), r("expr")]
        return [x for x in out if x != Lit("")]

    # one alternative per allowed argument count, so every call has a valid arity
    calls = [Seq((Lit(f"{f.name}("), *args(n), Lit(")")))
             for f in sorted(FUNCTIONS.values(), key=lambda f: f.min_args)
             for n in range(f.min_args, f.max_args + 1)]
    g.rules[f"{p}-call"] = Alt(tuple(calls))
    methods = [Seq((Lit(f".{m}("), *args(n - 1), Lit(")")))
               for m in METHODS for n in range(max(FUNCTIONS[m].min_args, 1), FUNCTIONS[m].max_args + 1)]
    g.rules[f"{p}-method-call"] = Alt(tuple(methods))


def _key_rule(quote: str, forbidden: str) -> Sym:
    """An attribute name in e["name"]: not empty, not starting with '_', no escapes."""
    first = Chars(f"[^{_class_escape(forbidden)}_\\\\\\x00-\\x1f]", "abcXYZ9 é")
    rest = Chars(f"[^{_class_escape(forbidden)}\\\\\\x00-\\x1f]", "abc_XYZ 9é")
    return Seq((Lit(quote), first, Rep(rest, 0, 60), Lit(quote)))


def _class_escape(chars: str) -> str:
    return "".join("\\" + c if c in '"\\]^-' else c for c in chars)


def _string_rule(quote: str, extra_forbidden: str) -> Sym:
    # any character but the quote, backslash and control characters
    forbidden = "".join(sorted(set(quote + extra_forbidden)))
    escaped = "".join("\\" + c if c in '"\\]^-' else c for c in forbidden)
    plain = Chars(f"[^{escaped}\\\\\\x00-\\x1f]", "abcXYZ 019.,:;!?-_/()éü")
    items: list[Sym] = [plain]
    if not extra_forbidden:
        items.append(Seq((Lit("\\"), Chars('["\\\\nt]', 'n"t\\'))))
    return Seq((Lit(quote), Rep(Alt(tuple(items)), 0, MAX_GRAMMAR_STRING), Lit(quote)))


@lru_cache(maxsize=4)
def build_grammar(step: bool = False, positional: bool = False, whole: bool = False) -> Grammar:
    """The whole-plan grammar; with ``step=True`` the grammar of one decomposition
    step (ReQAP's QUD stage): one operator whose inputs are ``QUD("...")``
    sub-questions or ``RETRIEVE(query=...)``. With ``positional=True`` operators
    take their inputs and RETRIEVE its query without names (the planner's spelling,
    ``OperatorSpec.unnamed``). With ``whole=True`` a plan is complete: no
    ``QUD("...")`` anywhere (the fine-tuned planner writes it in one call)."""
    g = Grammar()
    ops = [Ref(f"op-{name.lower().replace('_', '-')}") for name in OPERATORS]
    if step:
        g.rules["root"] = Alt(tuple(ops))
        g.rules["sub"] = Alt((Ref("qud"), Ref("op-retrieve")))
    else:
        g.rules["root"] = Ref("plan")
        g.rules["plan"] = Alt(tuple(ops) if whole else (Ref("qud"), *ops))
    if not whole:
        g.rules["qud"] = _seq(f"{QUD}(", Ref("string"), ")")
    for name, spec in OPERATORS.items():
        items: list[Sym] = [Lit(f"{name}(")]
        for i, p in enumerate(spec.params):
            sep = "" if i == 0 else ", "
            bare = positional and i < spec.unnamed
            if sep or not bare:
                items.append(Lit(sep if bare else f"{sep}{p.name}="))
            rule = _PARAM_RULE[p.kind]
            items.append(Ref("sub" if step and rule == "plan" else rule))
        items.append(Lit(")"))
        g.rules[f"op-{name.lower().replace('_', '-')}"] = Seq(tuple(items))
    g.rules["string"] = _string_rule('"', "")
    g.rules["sq-string"] = _string_rule("'", '"')
    g.rules["string-key"] = _key_rule('"', '"')
    g.rules["sq-string-key"] = _key_rule("'", "'\"")
    g.rules["str-list"] = _seq("[", Ref("string"), Rep(_seq(", ", Ref("string")), 0, MAX_LIST_ITEMS - 1), "]")
    g.rules["type-list"] = _seq("[", Ref("type-name"), Rep(_seq(", ", Ref("type-name")), 0, MAX_LIST_ITEMS - 1), "]")
    g.rules["type-name"] = _alts(*TYPE_NAMES)
    g.rules["row-lambda"] = _seq(f"lambda {ROW_PARAM}: ", Ref("x-expr"))
    g.rules["list-fct"] = Alt((*(Lit(f) for f in LIST_FUNCTIONS), _seq(f"lambda {LIST_PARAM}: ", Ref("y-expr"))))
    g.rules["condition"] = _seq('"', Ref("c-expr"), '"')
    _expression_rules(g, "x", (ROW_PARAM,), "string")
    _expression_rules(g, "y", (LIST_PARAM,), "string")
    _expression_rules(g, "c", ("i1", "i2"), "sq-string")
    g.rules["cmpop"] = _alts("==", "!=", "<=", ">=", "<", ">", "not in", "in")
    g.rules["known-attr"] = _alts(*sorted(DOT_ATTRIBUTES, key=lambda f: (-len(f), f)))
    g.rules["number"] = Seq((Ref("int"), Rep(Seq((Lit("."), Rep(Chars("[0-9]", "0123456789"), 1, 6))), 0, 1)))
    g.rules["int"] = Alt((Lit("0"), Seq((Chars("[1-9]", "123456789"),
                                         Rep(Chars("[0-9]", "0123456789"), 0, MAX_INT_DIGITS - 1)))))
    return g


_PARAM_RULE = {
    ParamKind.PLAN: "plan", ParamKind.STR: "string", ParamKind.STR_LIST: "str-list",
    ParamKind.TYPE_LIST: "type-list", ParamKind.LAMBDA1: "row-lambda", ParamKind.LIST_FCT: "list-fct",
    ParamKind.CONDITION: "condition",
}


def plan_grammar(positional: bool = False) -> str:
    """The GBNF text for one complete plan."""
    return build_grammar(positional=positional).to_gbnf()


def step_grammar(positional: bool = False) -> str:
    """The GBNF text for one decomposition step (children are QUD or RETRIEVE)."""
    return build_grammar(step=True, positional=positional).to_gbnf()
