"""What the graph pane shows, read from the engine: runs in the runner, no Qt.

Three neighbourhoods: of a query (the subgraph recall's spreading activation
lit — seeds, lit nodes, packed results — and its one-hop context, with the
activation the trace records), of a unit and of an entity
(the units within a few links, with activation spread from the unit or from
the units that mention the entity). Links come from `Bank.links`, one unit at
a time (each link is stored both ways, so the links leaving a unit are all of
its links); only links between shown units are kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.graph.activation import params_from_settings, rerun
from app.graph.model import GraphData, trace_links, trace_node_ids, typed_trace

if TYPE_CHECKING:
    from core import Bank, Link, RecallTrace

MAX_NODES = 600  # the pane stays readable (and the layout quick) below this
# One-hop context drawn around a recall's activated subgraph, strongest links first.
CONTEXT_NODES = 80


@dataclass(frozen=True)
class Neighbourhood:
    graph: GraphData
    activation: Mapping[str, Any] | None
    params: Mapping[str, Any]
    packed: tuple[str, ...] = ()
    title: str = ""
    notes: tuple[str, ...] = field(default=())
    context: tuple[str, ...] = ()  # shown for context: one link from the activated subgraph
    seeds: tuple[str, ...] = ()
    # Text and network of every unit the trace names, drawn or not (the recall
    # debugger's tables list channel hits the graph leaves out).
    texts: Mapping[str, str] = field(default_factory=dict)
    networks: Mapping[str, str] = field(default_factory=dict)


def _units(bank: Bank, ids: Sequence[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for start in range(0, len(ids), 500):
        for unit in bank.units(ids=list(ids[start : start + 500]), limit=None):
            found[unit.id] = unit
    return found


Row = tuple[str, str, str, float]


def _row(link: Link, specificity: Mapping[str, float]) -> Row:
    """A link as drawn: an entity link weighs what recall's spreading gives it,
    its stored weight times the entity's specificity (two facts sharing a rare
    entity are close; a hundred sharing the agent's name barely are)."""
    weight = float(link.weight)
    if link.kind == "entity" and link.entity_id is not None:
        weight *= specificity.get(link.entity_id, 1.0)
    return (link.source, link.target, str(link.kind), weight)


def _links_among(bank: Bank, ids: Iterable[str]) -> list[Row]:
    wanted = set(ids)
    specificity = bank.entity_specificity()
    out: list[Row] = []
    for unit_id in wanted:
        for link in bank.links(unit_id):
            if link.target in wanted:
                out.append(_row(link, specificity))
    return out


def _graph(
    bank: Bank, ids: Sequence[str], extra_links: Iterable[tuple[str, str, str, float]] = ()
) -> GraphData:
    units = _units(bank, ids)
    shown = [i for i in ids if i in units]  # retracted or deleted since: left out
    nodes = [(i, str(units[i].network)) for i in shown]
    labels = {i: units[i].text for i in shown}
    return GraphData.build(nodes, [*extra_links, *_links_among(bank, shown)], labels)


def bank_params(bank: Bank) -> dict[str, Any]:
    return params_from_settings(bank.config)


def activated_ids(trace: RecallTrace, packed: Iterable[str] = ()) -> list[str]:
    """What recall's spreading reached: seeds, then lit nodes in the order they
    were lit, then the packed results (a direct hit need not be lit)."""
    ordered: dict[str, None] = {}
    activation = trace.activation or {}
    for seed in activation.get("seeds", []):
        ordered.setdefault(seed["node"], None)
    for step in activation.get("steps", []):
        ordered.setdefault(step["node"], None)
    for unit_id in packed:
        ordered.setdefault(unit_id, None)
    return list(ordered)


def _context(
    bank: Bank, core: Sequence[str], limit: int
) -> tuple[list[str], list[tuple[str, str, str, float]]]:
    """The `limit` units one link from `core` with the strongest such link, and
    every link among core and them (read once per core unit)."""
    wanted = set(core)
    specificity = bank.entity_specificity()
    links: list[Row] = []
    outside: dict[str, float] = {}
    for unit_id in core:
        for link in bank.links(unit_id):
            row = _row(link, specificity)
            links.append(row)
            if link.target not in wanted:
                outside[link.target] = max(outside.get(link.target, 0.0), row[3])
    context = sorted(outside, key=lambda i: (-outside[i], i))[:limit]
    keep = wanted | set(context)
    return context, [row for row in links if row[1] in keep]


def of_trace(
    bank: Bank,
    trace: RecallTrace | Mapping[str, Any],
    packed: Iterable[str] = (),
    context_nodes: int = CONTEXT_NODES,
) -> Neighbourhood:
    """Recall's activated subgraph (seeds, lit nodes, packed results) and its
    one-hop context, with the links among them and the trace's activation
    (`trace`: recall's own, or a saved trace's JSON)."""
    trace = typed_trace(trace)
    packed_ids = tuple(packed) or tuple(trace.packing.packed)
    ids = activated_ids(trace, packed_ids) or trace_node_ids(trace)
    notes: list[str] = []
    if len(ids) > MAX_NODES:
        notes.append(f"showing the first {MAX_NODES} of {len(ids)} units recall reached")
        ids = ids[:MAX_NODES]
    context, links = _context(bank, ids, max(0, min(context_nodes, MAX_NODES - len(ids))))
    named = trace_node_ids(trace)
    units = _units(bank, list(dict.fromkeys([*ids, *context, *named])))
    shown = [i for i in [*ids, *context] if i in units]  # retracted or deleted since: left out
    graph = GraphData.build(
        [(i, str(units[i].network)) for i in shown],
        [*trace_links(trace), *links],
        {i: units[i].text for i in shown},
    )
    params = params_from_settings({**bank.config, **trace.settings})
    activation = trace.activation or {}
    return Neighbourhood(
        graph,
        trace.activation,
        params,
        packed_ids,
        f"recall: {trace.query}",
        tuple(notes),
        tuple(i for i in context if i in units),
        tuple(s["node"] for s in activation.get("seeds", [])),
        {i: u.text for i, u in units.items()},
        {i: str(u.network) for i, u in units.items()},
    )


def _expand(bank: Bank, start: Sequence[str], hops: int, limit: int) -> list[str]:
    seen: dict[str, None] = dict.fromkeys(start)
    frontier = list(start)
    for _ in range(hops):
        nxt: list[str] = []
        for unit_id in frontier:
            for link in bank.links(unit_id):
                if link.target not in seen and len(seen) < limit:
                    seen[link.target] = None
                    nxt.append(link.target)
        frontier = nxt
        if not frontier or len(seen) >= limit:
            break
    return list(seen)


def of_unit(bank: Bank, unit_id: str, hops: int = 2, limit: int = 300) -> Neighbourhood:
    """The units within `hops` links of one unit; activation spread from it."""
    unit = bank.unit(unit_id)
    ids = _expand(bank, [unit_id], hops, limit)
    graph = _graph(bank, ids)
    params = bank_params(bank)
    activation = _spread(graph, {unit_id: 1.0}, params)
    return Neighbourhood(graph, activation, params, (), f"unit: {unit.text[:60]}", seeds=(unit_id,))


def of_entity(bank: Bank, entity: str, hops: int = 1, limit: int = 300) -> Neighbourhood:
    """The units that mention an entity and their neighbours; activation spread from them."""
    mentioning = [u.id for u in bank.units(entity=entity, limit=limit)]
    ids = _expand(bank, mentioning, hops, limit) if mentioning else []
    graph = _graph(bank, ids)
    params = bank_params(bank)
    activation = _spread(graph, dict.fromkeys(mentioning, 1.0), params) if mentioning else None
    return Neighbourhood(
        graph, activation, params, (), f"entity: {entity}", seeds=tuple(mentioning)
    )


def _spread(
    graph: GraphData, seeds: Mapping[str, float], params: Mapping[str, Any]
) -> dict[str, Any]:
    return rerun(
        graph,
        seeds,
        decay=params["decay"],
        mu=params["mu"],
        threshold=params["threshold"],
        max_steps=params["max_steps"],
        node_budget=max(int(params["node_budget"]), len(seeds) + 1),
        step_budget=int(params["step_budget"]),
    )
