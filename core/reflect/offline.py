"""Extractive reflection: what a bank can answer without a language model.

It composes nothing. It takes the recalled evidence, scores each unit under Θ
and lists the best ones in that order, saying plainly that it is extractive:

- skepticism raises the bar for opinions (a minimum confidence per level) and
  for single-source claims, world facts resting on at most one source turn
  (discounted from level 3; at level 5 left out unless another recalled unit
  shares an entity with them);
- literalism prefers exact lexical matches with the question over paraphrase
  (level 5 leaves out units sharing no word with the question, when any do);
- empathy moves experience and facts about feelings and circumstances up
  (high empathy) or down (detached, low empathy);
- β weighs opinions against facts: opinions count ×(0.5 + β).

It forms no opinions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from core.reflect.values import Evidence, LeftOut
from core.types import Disposition, Network

MAX_ITEMS = 8
# Characters of a left-out memory quoted in the extractive answer.
LEFT_OUT_CHARS = 90

# Skepticism level -> minimum confidence an opinion needs to be used.
OPINION_BAR = {1: 0.0, 2: 0.2, 3: 0.35, 4: 0.5, 5: 0.65}
# Skepticism level -> factor on a claim resting on at most one source (5: corroboration needed).
SINGLE_SOURCE_FACTOR = {1: 1.0, 2: 1.0, 3: 0.9, 4: 0.7, 5: 0.5}
# Literalism level -> weight of the exact-word overlap with the question.
LEXICAL_WEIGHT = {1: 0.0, 2: 0.15, 3: 0.3, 4: 0.6, 5: 0.9}
# Empathy level -> bonus (or, when detached, penalty) for experience and for feelings.
EMPATHY_WEIGHT = {1: -0.3, 2: -0.15, 3: 0.0, 4: 0.2, 5: 0.4}

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOP_WORDS = """a an the and or but if of to in on at by for with from as is are was were be been being
    do does did have has had i me my you your he she it its we our they their them this that
    these those what which who whom whose when where why how there here not no so than then
    too very can could would should will shall may might must about into over after before
    any some all each more most much many just also"""
_STOP = frozenset(_STOP_WORDS.split())
# Cue words for feelings and personal circumstances.
_FEELING_WORDS = """feel feels felt feeling feelings emotion emotional happy happier sad upset angry
    worried worry worries anxious anxiety nervous afraid scared stress stressed stressful
    lonely tired exhausted overwhelmed excited proud ashamed embarrassed hurt grief grieving
    love loves loved hate hates hated miss misses missed sorry disappointed frustrated
    relieved grateful comfortable uncomfortable struggling struggle struggles cope coping
    family mother father mom dad parent parents son daughter kids children child wife husband
    partner friend friends divorce wedding baby pregnant sick ill illness injured injury
    hospital health diagnosis died death funeral lost job jobs fired unemployed money budget
    afford debt rent moved moving home homesick busy pressure deadline"""
_FEELING = frozenset(_FEELING_WORDS.split())


@dataclass(frozen=True)
class Scored:
    evidence: Evidence
    score: float
    reasons: tuple[str, ...]


def words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 1}


def lexical_overlap(query: str, text: str) -> float:
    """The share of the question's content words that appear, exactly, in `text`."""
    wanted = words(query)
    return len(wanted & words(text)) / len(wanted) if wanted else 0.0


def about_feelings(text: str) -> bool:
    return bool(set(_WORD.findall(text.lower())) & _FEELING)


def select(
    query: str,
    evidence: Sequence[Evidence],
    disposition: Disposition,
    max_items: int = MAX_ITEMS,
) -> tuple[list[Scored], list[LeftOut]]:
    """The evidence Θ selects, best first, and what it leaves out with the reason."""
    d = disposition
    n = len(evidence)
    if not n:
        return [], []
    top = max(e.score for e in evidence) or 1.0
    overlaps = {e.unit_id: lexical_overlap(query, e.text) for e in evidence}
    any_literal = any(v > 0 for v in overlaps.values())
    entity_count: dict[str, int] = {}
    for e in evidence:
        for entity in set(e.entity_ids):
            entity_count[entity] = entity_count.get(entity, 0) + 1

    scored: list[Scored] = []
    left_out: list[LeftOut] = []
    for rank, e in enumerate(evidence):
        # Recall's own judgement first: its score and its order, half each.
        score = 0.5 * (e.score / top) + 0.5 * (1.0 - rank / n)
        reasons: list[str] = []
        if e.network == Network.OPINION.value:
            confidence = e.confidence if e.confidence is not None else 0.5
            bar = OPINION_BAR[d.skepticism]
            if confidence < bar:
                left_out.append(
                    LeftOut(
                        e.unit_id,
                        f"opinion held with confidence {confidence:.2f}, below the bar of "
                        f"{bar:.2f} that skepticism {d.skepticism} sets",
                    )
                )
                continue
            score *= (0.5 + d.bias) * (0.5 + confidence)
            reasons.append(f"opinion weighed by bias {d.bias:.2f} and its confidence")
        if e.network == Network.WORLD.value and e.source_count <= 1:
            corroborated = any(entity_count[x] > 1 for x in set(e.entity_ids))
            if d.skepticism == 5 and not corroborated:
                left_out.append(
                    LeftOut(
                        e.unit_id,
                        "a single-source claim nothing else corroborates, and skepticism 5 "
                        "asks for corroboration",
                    )
                )
                continue
            factor = SINGLE_SOURCE_FACTOR[d.skepticism]
            if factor < 1.0:
                score *= factor if not corroborated else (1.0 + factor) / 2
                reasons.append(f"single-source claim discounted by skepticism {d.skepticism}")
        overlap = overlaps[e.unit_id]
        if d.literalism == 5 and any_literal and overlap == 0:
            left_out.append(
                LeftOut(
                    e.unit_id,
                    "paraphrase only: no word of the question appears in it, and literalism 5 "
                    "keeps to exact wording",
                )
            )
            continue
        weight = LEXICAL_WEIGHT[d.literalism]
        if weight:
            score += weight * (overlap - 0.5)
            reasons.append(f"exact-word overlap {overlap:.2f} weighed by literalism {d.literalism}")
        bonus = EMPATHY_WEIGHT[d.empathy]
        if bonus:
            personal = (e.network == Network.EXPERIENCE.value) + about_feelings(e.text)
            if personal:
                score += bonus * personal
                reasons.append(
                    f"{'moved up' if bonus > 0 else 'moved down'} by empathy {d.empathy} "
                    "(experience or feelings and circumstances)"
                )
        scored.append(Scored(e, score, tuple(reasons)))

    scored.sort(key=lambda s: -s.score)
    for s in scored[max_items:]:
        left_out.append(LeftOut(s.evidence.unit_id, "ranked below the selection under this Θ"))
    return scored[:max_items], left_out


_LABEL = {
    Network.EXPERIENCE.value: "what I did",
    Network.WORLD.value: "what I know",
    Network.OPINION.value: "what I believe",
    Network.OBSERVATION.value: "profile",
}


def summary(
    query: str,
    disposition: Disposition,
    selected: Sequence[Scored],
    left_out: Sequence[LeftOut],
    evidence: Sequence[Evidence] = (),
) -> str:
    """The extractive answer, a structured summary that says what it is."""
    d = disposition
    lines = [
        "Extractive reflection (no language model was used): this is not a composed answer. "
        "It lists the stored memories most relevant to the question, selected and ordered by "
        f"the disposition (skepticism {d.skepticism}/5, literalism {d.literalism}/5, "
        f"empathy {d.empathy}/5, bias {d.bias:.2f}), and forms no opinions.",
        "",
        f"Question: {query}",
        "",
    ]
    if not selected:
        lines.append("Nothing in memory passed this disposition's selection.")
    for i, s in enumerate(selected, start=1):
        e = s.evidence
        extra = f", confidence {e.confidence:.2f}" if e.confidence is not None else ""
        lines.append(f"{i}. [{_LABEL.get(e.network, e.network)}, {e.date}{extra}] {e.text}")
    if left_out:
        # Readable, not bare ids: what each left-out memory says, and why it was left out.
        texts = {e.unit_id: e.text for e in evidence}
        lines += ["", f"Left out ({len(left_out)}):"]
        lines += [f"- {_snippet(texts.get(x.unit_id), x.unit_id)} — {x.reason}" for x in left_out]
    return "\n".join(lines)


def _snippet(text: str | None, unit_id: str) -> str:
    if not text:
        return f"[{unit_id}]"
    text = " ".join(text.split())
    return f"“{text if len(text) <= LEFT_OUT_CHARS else text[: LEFT_OUT_CHARS - 1] + '…'}”"


def within_tokens(
    text: str, max_tokens: int | None, count: Callable[[list[str]], list[int]]
) -> str:
    """`text` cut to at most `max_tokens` tokens (as `count` counts them): whole
    lines while they fit, then the words of the next one that do, and "…"."""
    if max_tokens is None:
        return text
    lines = text.split("\n")
    sizes = count(lines)
    if sum(sizes) + len(lines) - 1 <= max_tokens:
        return text
    kept: list[str] = []
    used = 0
    for line, size in zip(lines, sizes, strict=True):
        if used + size + 1 > max_tokens:
            words = line.split()
            while words and used + count([" ".join(words) + " …"])[0] > max_tokens:
                words = words[: len(words) // 2] if len(words) > 8 else words[:-1]
            if words:
                kept.append(" ".join(words) + " …")
            elif kept:
                kept[-1] += " …"
            break
        kept.append(line)
        used += size + 1
    return "\n".join(kept) or "…"
