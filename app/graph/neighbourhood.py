"""What the graph pane shows, read from the engine: runs in the runner, no Qt.

Three neighbourhoods: of a query (the subgraph recall's spreading activation
lit — seeds, lit nodes, packed results — and its one-hop context, with the
activation the trace records), of a unit and of an entity
(the units within a few links, with activation spread from the unit or from
the units that mention the entity). Each is one `Bank.subgraph` call (the walk
runs in the engine, over its in-memory link graph): a remote bank answers a
view in a few round trips, not one per unit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.graph.activation import params_from_settings, rerun
from app.graph.model import GraphData, trace_links, trace_node_ids, typed_trace
from core import Subgraph

if TYPE_CHECKING:
    from core import Bank, RecallTrace

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


def _graph(found: Subgraph, extra_links: Iterable[tuple[str, str, str, float]] = ()) -> GraphData:
    nodes = [(u.id, str(u.network)) for u in found.units]
    labels = {u.id: u.text for u in found.units}
    return GraphData.build(nodes, [*extra_links, *found.links], labels)


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
    found = bank.subgraph(
        ids, hops=0, limit=len(ids), context=max(0, min(context_nodes, MAX_NODES - len(ids)))
    )
    units = {u.id: u for u in found.units}  # retracted or deleted since: left out
    named = [i for i in trace_node_ids(trace) if i not in units]
    units.update(_units(bank, named))
    graph = _graph(found, trace_links(trace))
    params = params_from_settings({**bank.config, **trace.settings})
    activation = trace.activation or {}
    return Neighbourhood(
        graph,
        trace.activation,
        params,
        packed_ids,
        f"recall: {trace.query}",
        tuple(notes),
        found.context,
        tuple(s["node"] for s in activation.get("seeds", [])),
        {i: u.text for i, u in units.items()},
        {i: str(u.network) for i, u in units.items()},
    )


def of_unit(bank: Bank, unit_id: str, hops: int = 2, limit: int = 300) -> Neighbourhood:
    """The units within `hops` links of one unit; activation spread from it."""
    found = bank.subgraph([unit_id], hops=hops, limit=limit)
    unit = next((u for u in found.units if u.id == unit_id), None)
    if unit is None:  # not active: say why as a direct read would
        unit = bank.unit(unit_id)
    graph = _graph(found)
    params = bank_params(bank)
    activation = _spread(graph, {unit_id: 1.0}, params)
    return Neighbourhood(graph, activation, params, (), f"unit: {unit.text[:60]}", seeds=(unit_id,))


def of_entity(bank: Bank, entity: str, hops: int = 1, limit: int = 300) -> Neighbourhood:
    """The units that mention an entity and their neighbours; activation spread from them."""
    mentioning = [u.id for u in bank.units(entity=entity, limit=limit)]
    found = bank.subgraph(mentioning, hops=hops, limit=limit) if mentioning else Subgraph()
    graph = _graph(found)
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
