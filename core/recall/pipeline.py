"""recall(bank, query, budget): four channels in parallel, fused, reranked, packed.

    query ─┬─ lexical (BM25) ──┬──────────────────────────┐
           ├─ embed ─ semantic ─┴─ seeds ─ graph ────────┤
           └─ time expression ─ temporal ─────────────────┴─ RRF ─ focus ─ rerank ─ pack

The graph is seeded from the best semantic and lexical hits fused. Speakers
the query names (focus.py) decide who, not what: their facts are lifted after
fusion, and their names are left out of the text the semantic channel embeds.

Each stage is a function here (`_request`, `_speakers`, `_retrieve`, `_fuse`,
`_rerank`, `_pack`, `_observations`; `_stages` runs them in order) and records
what it did in the typed trace (core/recall/trace.py), so a person can see why
each fact was returned and why others were not. The one write is the access count of what was returned (`count_access`),
made in the background (core/store/access.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from core.limits import QUERY_CHARS, check_text
from core.recall import channels as ch
from core.recall import focus
from core.recall.activation import Activation
from core.recall.diversity import mmr
from core.recall.fusion import Fused, boost, rrf
from core.recall.packing import TOKEN_COUNTS, pack, spread_sources
from core.recall.rerank import (
    Candidate,
    CrossEncoderReranker,
    FusionOrder,
    HeuristicReranker,
    RerankContext,
    Reranker,
)
from core.recall.result import RecallItem, RecallResult
from core.recall.settings import CHANNELS, LEVELS, mu, resolve
from core.recall.trace import (
    Focus,
    ObservationsTrace,
    PackingTrace,
    QueryInterval,
    RecallTrace,
    RerankScore,
    RerankTrace,
    SkippedFact,
)
from core.recall.unitcache import (
    Labels,
    labels_in_memory,
    latest_activity,
    observations_of,
    recall_units,
)
from core.store.bank_store import utcnow
from core.store.tagged import allowed_units
from core.store.units import get_vectors
from core.tags import TagScope, describe
from core.timeparse import naive_utc
from core.types import InvalidInputError, Network, Unit, UnitStatus

if TYPE_CHECKING:
    from core.handle import BankHandle

# A query is cut before the parts that cannot use more: the embedding model
# reads 256 word pieces (~1,000 characters of English), BM25 its first 64 terms.
MAX_EMBED_CHARS = 2000
MAX_LEXICAL_CHARS = 10_000
MAX_TIME_CHARS = 1000
MAX_RERANK_CHARS = 2000
MAX_TRACE_QUERY_CHARS = 2000

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    # One shared pool: starting threads per recall would cost more than a channel.
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="recall")
        return _pool


def recall(
    bank: BankHandle,
    query: str,
    budget_tokens: int = 1024,
    networks: Network | str | Sequence[Network | str] | None = None,
    now: datetime | None = None,
    level: str = "mid",
    reranker: Reranker | str | None = None,
    channels: Sequence[str] | None = None,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    observation_budget: int = 0,
    settings: Mapping[str, Any] | None = None,
    count_access: bool = True,
    tags: TagScope | None = None,
) -> RecallResult:
    """Recall what `bank` holds about `query`, packed into `budget_tokens`.

    - networks: limit to these networks (default all four); an empty list recalls nothing.
    - now: the reference time for relative expressions in the query (default:
      the bank's latest activity).
    - level: low | mid | high — candidates each channel returns (20 / 50 / 150).
    - reranker: a `Reranker`, "heuristic", "none" (fused order), or None for the
      bank's choice (a cross-encoder when `recall.cross_encoder_path` names one).
    - channels: a subset of semantic, lexical, graph, temporal (default all).
    - start / end: only facts whose occurrence overlaps [start, end), in every channel.
    - observation_budget: tokens for the observations (entity profiles) of the
      entities in the packed facts, on top of `budget_tokens` (default 0: none).
    - settings: overrides of `recall.*` settings for this call.
    - tags: only the units this tag scope lets through (core/tags.py), in every
      channel: a pre-filter, so the budget fills from the scope.
    - count_access: count this recall in each returned unit's `access_count` and
      `last_accessed_at` (the one write recall makes). Callers that only inspect
      recall (the studio's recall debugger, benchmarks) pass False.
    """
    t_start = time.perf_counter()
    request = _request(
        bank,
        query,
        budget_tokens,
        networks,
        now,
        level,
        reranker,
        channels,
        start,
        end,
        observation_budget,
        settings,
        tags,
    )
    result = _stages(bank, request, t_start)
    if count_access:
        ids = [i.unit_id for i in (*result.items, *result.observations)]
        if ids:
            # Written in the background (core/store/access.py): no write lock here.
            bank.store.access.record(ids, utcnow())
    return result


@dataclass(frozen=True)
class _Request:
    """One recall's checked arguments and the settings it runs with."""

    query: str
    budget: int
    observation_budget: int
    level: str
    k: int  # candidates per channel
    networks: tuple[str, ...]
    channels: tuple[str, ...]
    now: datetime | None
    scope: ch.Scope
    tags: TagScope | None
    cfg: Mapping[str, Any]
    ranker: Reranker
    reference: datetime
    reference_source: str


@dataclass
class _Retrieved:
    """What the channels found: each channel's result, the spreading that fed the
    graph, and the time the query names (if any)."""

    results: dict[str, ch.ChannelResult] = field(default_factory=dict)
    activation: Activation | None = None
    interval: Any = None


@dataclass
class _Reranked:
    """The candidates in their final order, each with its reranked score."""

    ranked: list[Candidate]
    scores: list[float]
    units: dict[str, Unit]


def _stages(bank: BankHandle, request: _Request, t_start: float) -> RecallResult:
    """The stages in order, each timed into the trace; a stage with nothing to
    hand on ends the recall early (with a note saying why)."""
    trace = _new_trace(request)
    timings = trace.timings_ms

    loaded: dict[str, Unit] = {}

    def finish(items=(), observations=(), used=0) -> RecallResult:
        timings["total"] = _ms(t_start)
        timings["total_excluding_embedding"] = timings["total"] - timings.get("embed", 0.0)
        return RecallResult(
            query=request.query,
            items=tuple(items),
            reranker=request.ranker.name,
            trace=trace,
            budget=request.budget,
            tokens_used=used,
            observations=tuple(observations),
            units={i.unit_id: loaded[i.unit_id] for i in (*items, *observations)},
        )

    if not request.networks:
        trace.notes.append("no networks selected: nothing to recall")
        return finish()
    if request.scope.allowed is not None:
        trace.notes.append(
            f"tag scope {describe(request.tags)}: every channel searched only its "
            f"{len(request.scope.allowed):,} active unit(s)"
        )
        if not request.scope.allowed:
            return finish()
    if not ch.has_words(request.query):
        trace.notes.append("the query has no letters or digits: nothing to recall")
        return finish()

    t0 = time.perf_counter()
    labels = labels_in_memory(bank.store)
    who, semantic_query = _speakers(bank.store, request, trace, labels)
    timings["speakers"] = _ms(t0)

    retrieved = _retrieve(bank, request, semantic_query, trace)

    t0 = time.perf_counter()
    fused = _fuse(bank.store, request, retrieved.results, who, trace, retrieved.interval, labels)
    timings["fusion"] = _ms(t0)
    if not fused:
        trace.notes.append("no channel returned anything")
        return finish()

    reranked = _rerank(bank.store, request, fused, retrieved.interval, trace)

    t0 = time.perf_counter()
    items, used = _pack(bank, request, reranked, trace)
    timings["packing"] = _ms(t0)
    loaded.update(reranked.units)

    observations: list[RecallItem] = []
    if request.observation_budget > 0 and items:
        t0 = time.perf_counter()
        observations = _observations(
            bank, items, request.observation_budget, trace, request.scope, loaded
        )
        timings["observations"] = _ms(t0)
    return finish(items, observations, used)


def _request(
    bank: BankHandle,
    query: Any,
    budget_tokens: Any,
    networks: Any,
    now: Any,
    level: Any,
    reranker: Reranker | str | None,
    channels: Any,
    start: Any,
    end: Any,
    observation_budget: Any,
    settings: Mapping[str, Any] | None,
    tags: TagScope | None = None,
) -> _Request:
    """The arguments checked (InvalidInputError naming the bad one), the bank's
    settings with this call's overrides, and the reference time for the query."""
    query = _check_query(query)
    budget = _check_budget(budget_tokens, "budget_tokens")
    obs_budget = _check_budget(observation_budget, "observation_budget")
    if level not in LEVELS:
        raise InvalidInputError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    nets = _check_networks(networks)
    wanted = _check_channels(channels)
    now = _naive_utc(now, "now")
    start = _naive_utc(start, "start")
    end = _naive_utc(end, "end")
    try:
        cfg = resolve(bank.config, settings)
    except (KeyError, ValueError, TypeError) as error:
        raise InvalidInputError(str(error)) from None
    ranker = _choose_reranker(reranker, cfg)
    if now is not None:
        reference, reference_source = now, "now"
    else:
        reference, reference_source = reference_time(bank.store)
    return _Request(
        query=query,
        budget=budget,
        observation_budget=obs_budget,
        level=level,
        k=LEVELS[level],
        networks=nets,
        channels=wanted,
        now=now,
        scope=ch.Scope(nets, start, end, _allowed(bank, tags)),
        tags=tags,
        cfg=cfg,
        ranker=ranker,
        reference=reference,
        reference_source=reference_source,
    )


def _allowed(bank: BankHandle, tags: TagScope | None) -> frozenset[str] | None:
    """The units a tag scope lets through (None: no tag scope)."""
    if tags is None or not tags.active:
        return None
    return allowed_units(bank.store.reader(), tags)


def _new_trace(request: _Request) -> RecallTrace:
    return RecallTrace(
        query=request.query[:MAX_TRACE_QUERY_CHARS],
        query_chars=len(request.query),
        budget=request.budget,
        level=request.level,
        candidates_per_channel=request.k,
        networks=list(request.networks),
        start=request.scope.start,
        end=request.scope.end,
        now=request.now,
        reference_time=request.reference,
        reference_source=request.reference_source,
        settings=dict(request.cfg),
        channels_requested=list(request.channels),
        rerank=RerankTrace(name=request.ranker.name),
        packing=PackingTrace(budget=request.budget),
        observations=ObservationsTrace(budget=request.observation_budget),
    )


def _speakers(
    store, request: _Request, trace: RecallTrace, labels: Labels | None
) -> tuple[focus.Speakers, str]:
    """Who the query is about, and the text the semantic channel embeds (without
    their names, when the bank's settings say so: the names say who, not what)."""
    query = request.query
    who = focus.speakers(store, query[:MAX_LEXICAL_CHARS], labels)
    semantic_query = (
        who.without_names(query) if request.cfg["recall.embed_without_speakers"] else query
    )
    trace.speakers_named = list(who.named)
    trace.semantic_query = semantic_query[:MAX_TRACE_QUERY_CHARS]
    if semantic_query != query:
        trace.notes.append(
            f"the semantic channel embedded {semantic_query[:200]!r}: the speakers'"
            " names say who, not what"
        )
    return who, semantic_query


def _retrieve(
    bank: BankHandle, request: _Request, semantic_query: str, trace: RecallTrace
) -> _Retrieved:
    """The four channels. The graph is seeded from the best semantic and lexical
    hits, so it runs once both are in (and they run for it even when not asked for)."""
    store, query, k, scope, cfg = bank.store, request.query, request.k, request.scope, request.cfg
    wanted = request.channels
    timings = trace.timings_ms
    pool = _executor()
    out = _Retrieved()
    results = out.results
    t_channels = time.perf_counter()
    want_graph = "graph" in wanted
    lexical_future: Future | None = None
    if "lexical" in wanted or want_graph:
        lexical_future = pool.submit(ch.lexical, store, query[:MAX_LEXICAL_CHARS], k, scope)

    vector: np.ndarray | None = None
    if {"semantic", "graph", "temporal"} & set(wanted):
        t0 = time.perf_counter()
        vector = bank.embedder.embed_one(semantic_query[:MAX_EMBED_CHARS])
        timings["embed"] = _ms(t0)

    semantic_future: Future | None = None
    if vector is not None and ("semantic" in wanted or want_graph):
        semantic_future = pool.submit(ch.semantic, store, vector, k, scope)

    if "temporal" in wanted:
        t0 = time.perf_counter()
        interval, why = _parse_interval(query[:MAX_TIME_CHARS], request.reference)
        timings["parse_time"] = _ms(t0)
        if interval is None:
            results["temporal"] = ch.silent("temporal", why)
        else:
            out.interval = interval
            trace.interval = QueryInterval(
                interval.start,
                interval.end,
                getattr(interval, "text", ""),
                float(getattr(interval, "confidence", 1.0)),
            )
            results["temporal"] = ch.temporal(
                store,
                vector,
                interval.start,
                interval.end,
                k,
                scope,
                float(cfg["recall.temporal_similarity_weight"]),
            )
            results["temporal"].ms += timings["parse_time"]

    direct = {}
    if lexical_future is not None:
        direct["lexical"] = lexical_future.result()
    if semantic_future is not None:
        direct["semantic"] = semantic_future.result()
    results.update((name, result) for name, result in direct.items() if name in wanted)
    if want_graph:
        seeds = _seeds(store, vector, direct, cfg)
        results["graph"], out.activation = ch.graph(store, seeds, k, scope, cfg, mu(cfg), vector)
    # Wall time of the four channels together, the query embedding not counted.
    timings["channels"] = _ms(t_channels) - timings.get("embed", 0.0)
    for name in CHANNELS:
        if name in results:
            timings[name] = results[name].ms
    trace.channels = {name: results[name] for name in CHANNELS if name in results}
    trace.activation = out.activation.to_dict() if out.activation is not None else None
    return out


def _fuse(
    store,
    request: _Request,
    results: Mapping[str, ch.ChannelResult],
    who: focus.Speakers,
    trace: RecallTrace,
    interval: Any = None,
    labels: Labels | None = None,
) -> list[Fused]:
    """Reciprocal rank fusion of the channels that ran, then speaker focus. The
    temporal channel votes as surely as the query's time was read."""
    cfg = request.cfg
    weights = {name: float(cfg[f"recall.weight_{name}"]) for name in CHANNELS}
    weights["temporal"] *= float(getattr(interval, "confidence", 1.0)) if interval else 1.0
    fused = rrf(
        {name: results[name].ids for name in CHANNELS if name in results and results[name].ran},
        k=float(cfg["recall.rrf_k"]),
        weights=weights,
    )
    factor = 1.0 + float(cfg["recall.speaker_focus"])
    if factor != 1.0 and who.focused:
        spoken = focus.spoken_by(store, [f.id for f in fused], who.focused, labels)
        fused = boost(fused, spoken, factor)
        trace.focus = Focus(tuple(who.focused), factor, tuple(sorted(spoken)))
        trace.notes.append(
            f"speaker focus: {len(spoken)} candidates spoken by "
            f"{' or '.join(who.focused)} count ×{factor:g}"
        )
    trace.fused = list(fused)
    return fused


def _rerank(
    store, request: _Request, fused: list[Fused], interval: Any, trace: RecallTrace
) -> _Reranked:
    """The active candidates scored by the reranker, then diversified (MMR over
    their vectors, and spread across sources) as the settings ask."""
    cfg, timings = request.cfg, trace.timings_ms
    t0 = time.perf_counter()
    units = recall_units(store, [f.id for f in fused])
    timings["load"] = _ms(t0)
    candidates = [
        Candidate(
            unit_id=f.id,
            text=units[f.id].text,
            network=units[f.id].network.value,
            fused_score=f.score,
            fused_rank=f.rank,
            occurred_start=units[f.id].occurred_start,
            occurred_end=units[f.id].occurred_end,
            mentioned_at=units[f.id].mentioned_at,
            channels={name: c.rank for name, c in f.contributions.items()},
        )
        for f in fused
        if f.id in units and units[f.id].status == UnitStatus.ACTIVE
    ]
    t0 = time.perf_counter()
    context = RerankContext(
        now=request.reference,
        interval_start=interval.start if interval is not None else None,
        interval_end=interval.end if interval is not None else None,
        interval_confidence=float(getattr(interval, "confidence", 1.0)) if interval else 1.0,
    )
    ranker = request.ranker
    scores = ranker.score(request.query[:MAX_RERANK_CHARS], candidates, context)
    if len(scores) != len(candidates):
        raise RuntimeError(f"reranker {ranker.name} returned {len(scores)} scores")
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i].fused_rank))
    lam = float(cfg["recall.diversity"])
    if lam > 0 and len(order) > 1:
        head = order[: int(cfg["recall.diversity_candidates"])]
        vectors = get_vectors(store.reader(), [candidates[i].unit_id for i in head])
        matrix = np.stack([vectors[candidates[i].unit_id] for i in head])
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        picked = mmr([scores[i] for i in head], matrix, lam)
        order = [head[j] for j in picked] + order[len(head) :]
    window = int(cfg["recall.source_diversity_window"])
    if window > 1:
        spread = spread_sources([units[candidates[i].unit_id].source_ids for i in order], window)
        order = [order[j] for j in spread]
    ranked = [candidates[i] for i in order]
    trace.rerank.ms = _ms(t0)
    trace.rerank.scores = [
        RerankScore(c.unit_id, float(s), c.fused_rank)
        for c, s in zip(candidates, scores, strict=True)
    ]
    trace.rerank.order = [c.unit_id for c in ranked]
    timings["rerank"] = trace.rerank.ms
    return _Reranked(ranked, [float(scores[i]) for i in order], units)


def _pack(
    bank: BankHandle, request: _Request, reranked: _Reranked, trace: RecallTrace
) -> tuple[list[RecallItem], int]:
    """Greedy packing in reranked order under the budget; an observation (an
    entity profile) gets at most a fair share of it. Returns the items and the
    tokens they use."""
    ranked, budget = reranked.ranked, request.budget
    tokens = TOKEN_COUNTS.count(bank.embedder, [c.text for c in ranked])
    share = max(1, int(budget * float(request.cfg["recall.observation_max_share"])))
    observation = Network.OBSERVATION.value
    packed = pack(tokens, budget, [share if c.network == observation else None for c in ranked])
    items = [
        _item(reranked.units[ranked[i].unit_id], reranked.scores[i], tokens[i], i + 1)
        for i in packed.taken
    ]
    trace.packing.order = [c.unit_id for c in ranked]
    trace.packing.tokens = {c.unit_id: n for c, n in zip(ranked, tokens, strict=True)}
    trace.packing.packed = [item.unit_id for item in items]
    trace.packing.skipped = [
        SkippedFact(ranked[i].unit_id, tokens[i], _left_at(tokens, packed.taken, i, budget))
        for i in packed.skipped
    ]
    trace.packing.tokens_used = packed.used
    return items, packed.used


def _seeds(
    store, vector: np.ndarray, direct: Mapping[str, ch.ChannelResult], cfg
) -> list[tuple[str, float]]:
    """The graph's seeds: the best of the semantic and lexical hits fused, each
    with its similarity to the query (the seed's activation). Lexical hits seed
    too: a rare word the query shares can find what its embedding does not."""
    fused = rrf(
        {name: result.ids for name, result in direct.items()},
        k=float(cfg["recall.rrf_k"]),
        weights={name: float(cfg[f"recall.weight_{name}"]) for name in direct},
    )
    best = [f.id for f in fused[: int(cfg["recall.activation_seeds"])]]
    semantic = direct.get("semantic")
    similarity = dict(zip(semantic.ids, semantic.scores, strict=True)) if semantic else {}
    similarity.update(ch.similarities(store, [i for i in best if i not in similarity], vector))
    return [(unit_id, similarity.get(unit_id, 0.0)) for unit_id in best]


def _parse_interval(text: str, reference: datetime):
    try:
        from core.timeparse import query_interval
    except ImportError:
        return None, "time parsing is not available"
    try:
        interval = query_interval(text, reference)
    except Exception as error:  # a parser failure must not fail the whole recall
        return None, f"could not read a time in the query ({type(error).__name__})"
    if interval is None:
        return None, "no time expression in the query"
    return interval, ""


def reference_time(store) -> tuple[datetime, str]:
    """(the time recall takes as now when none is given, where it came from)."""
    latest = _latest_activity(store)
    return (latest, "latest activity") if latest else (utcnow(), "clock")


def _latest_activity(store) -> datetime | None:
    mentioned, occurred = latest_activity(store)
    # The latest conversation is "now" for the bank; occurrence times can lie in
    # the future (plans), so they count only when nothing records a mention time.
    return mentioned or occurred


def _item(unit: Unit, score: float, tokens: int, rank: int) -> RecallItem:
    return RecallItem(
        unit_id=unit.id,
        network=unit.network.value,
        text=unit.text,
        score=score,
        tokens=tokens,
        source_ids=tuple(unit.source_ids),
        occurred_start=unit.occurred_start,
        occurred_end=unit.occurred_end,
        confidence=unit.confidence,
        entity_ids=tuple(unit.entity_ids),
        rank=rank,
    )


def _left_at(tokens: Sequence[int], taken: Sequence[int], index: int, budget: int) -> int:
    return budget - sum(tokens[i] for i in taken if i < index)


def _observations(
    bank: BankHandle,
    items: list[RecallItem],
    budget: int,
    trace: RecallTrace,
    scope: ch.Scope,
    loaded: dict[str, Unit],
) -> list[RecallItem]:
    """Observations of the entities the packed facts mention, the most mentioned
    entities first, greedily under their own budget (their units go into `loaded`)."""
    counts: dict[str, int] = {}
    for item in items:
        for entity in item.entity_ids:
            counts[entity] = counts.get(entity, 0) + 1
    if not counts:
        return []
    entities = sorted(counts, key=lambda e: (-counts[e], e))
    by_entity = observations_of(bank.store, entities)
    packed_ids = {item.unit_id for item in items}
    order: list[str] = []
    for entity in entities:
        for unit_id in sorted(by_entity.get(entity, ())):
            if unit_id not in packed_ids and unit_id not in order and scope.admits(unit_id):
                order.append(unit_id)
    if not order:
        return []
    units = recall_units(bank.store, order)
    loaded.update(units)
    order = [u for u in order if u in units]
    tokens = TOKEN_COUNTS.count(bank.embedder, [units[u].text for u in order])
    # With others waiting, no one observation takes more than half of their budget.
    limit = budget // 2 if len(order) > 1 else None
    packed = pack(tokens, budget, [limit] * len(order))
    trace.observations.packed = [order[i] for i in packed.taken]
    trace.observations.skipped = [order[i] for i in packed.skipped]
    trace.observations.tokens_used = packed.used
    trace.observations.tokens = {u: n for u, n in zip(order, tokens, strict=True)}
    return [_item(units[order[i]], 0.0, tokens[i], n + 1) for n, i in enumerate(packed.taken)]


def _choose_reranker(reranker: Reranker | str | None, cfg: Mapping[str, Any]) -> Reranker:
    if reranker is None:
        path = str(cfg.get("recall.cross_encoder_path") or "")
        if path:
            return CrossEncoderReranker(path)
        reranker = "heuristic"
    if isinstance(reranker, str):
        if reranker == "heuristic":
            return HeuristicReranker(
                time_weight=float(cfg["recall.rerank_time_weight"]),
                recency_weight=float(cfg["recall.rerank_recency_weight"]),
                half_life_days=float(cfg["recall.rerank_half_life_days"]),
            )
        if reranker == "none":
            return FusionOrder()
        raise InvalidInputError(
            f"unknown reranker {reranker!r}: use 'heuristic', 'none' or a Reranker object"
        )
    if not isinstance(reranker, Reranker):
        raise InvalidInputError("a reranker needs a `name` and a `score` method")
    return reranker


def _check_query(query: Any) -> str:
    if not isinstance(query, str):
        raise InvalidInputError(f"a recall query must be text, got {type(query).__name__}")
    check_text("query", query, QUERY_CHARS)
    query = query.strip()
    if not query:
        raise InvalidInputError("a recall query cannot be empty")
    return query


def _check_budget(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise InvalidInputError(f"{name} must be a whole number of tokens >= 0, got {value!r}")
    return int(value)


def _check_networks(networks: Any) -> tuple[str, ...]:
    if networks is None:
        return ch.ALL_NETWORKS
    if isinstance(networks, str):
        networks = [networks]
    out: list[str] = []
    for n in networks:
        try:
            value = Network(n).value
        except ValueError:
            raise InvalidInputError(
                f"unknown network {n!r}; choose from {', '.join(ch.ALL_NETWORKS)}"
            ) from None
        if value not in out:
            out.append(value)
    return tuple(out)


def _check_channels(channels: Any) -> tuple[str, ...]:
    if channels is None:
        return CHANNELS
    if isinstance(channels, str):
        channels = [channels]
    unknown = [c for c in channels if c not in CHANNELS]
    if unknown:
        raise InvalidInputError(
            f"unknown channel {unknown[0]!r}; choose from {', '.join(CHANNELS)}"
        )
    if not channels:
        raise InvalidInputError("choose at least one channel")
    return tuple(c for c in CHANNELS if c in channels)


def _naive_utc(value: datetime | None, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{name} must be a datetime, got {type(value).__name__}")
    return naive_utc(value)


def _ms(since: float) -> float:
    return (time.perf_counter() - since) * 1000.0
