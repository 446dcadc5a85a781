"""Judged outcomes of golden cases and their aggregate report (data; JSON-ready)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...bench.stats import percentile
from .dataset import GoldenDataset

#: Hits per query the format's metrics are defined at.
TOP_K = 5


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Pass/fail thresholds. Recall, precision, isolation and budget block; latency warns."""

    min_recall: float = 0.8
    min_precision: float = 0.7
    max_latency_p95_ms: float = 200.0


@dataclass(frozen=True, slots=True)
class ReturnedItem:
    """One hit of a case, judged against the case's setup memories."""

    content: str
    kind: str
    score: float
    verdict: str
    """``expected``, ``unexpected``, ``forbidden``, ``cross_user``, ``cross_tenant`` or
    ``unknown`` (a row no setup memory wrote)."""


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of one case."""

    id: str
    tags: tuple[str, ...]
    query: str
    rubric: str
    expected: tuple[str, ...]
    expect_empty: bool
    returned: tuple[ReturnedItem, ...]
    found: tuple[str, ...]
    missing: tuple[str, ...]
    recall: float | None
    """Share of expected contents returned; None when the case expects nothing."""
    precision: float | None
    """Share of returned items that are expected; None when nothing was returned."""
    latency_ms: float
    token_count: int
    """``RecallResult.token_count`` as reported by recall."""
    counted_tokens: int
    """Tokens of the returned contents, counted here (cl100k_base)."""
    token_budget: int
    degraded: bool
    expected_kinds: tuple[str, ...] = ()
    """The kind of content of each expected item (same order as ``expected``)."""

    @property
    def forbidden_hits(self) -> int:
        return sum(1 for r in self.returned if r.verdict == "forbidden")

    @property
    def cross_user(self) -> int:
        return sum(1 for r in self.returned if r.verdict == "cross_user")

    @property
    def cross_tenant(self) -> int:
        return sum(1 for r in self.returned if r.verdict == "cross_tenant")

    @property
    def budget_ok(self) -> bool:
        return max(self.token_count, self.counted_tokens) <= self.token_budget

    @property
    def empty_ok(self) -> bool | None:
        """For expect_empty cases: whether nothing came back; None for other cases."""
        return (not self.returned) if self.expect_empty else None

    @property
    def problems(self) -> list[str]:
        """What went wrong, most serious first; empty when the case is perfect."""
        out: list[str] = []
        if self.cross_tenant:
            out.append(f"{self.cross_tenant} cross-tenant item(s)")
        if self.cross_user:
            out.append(f"{self.cross_user} cross-user item(s)")
        if not self.budget_ok:
            used = max(self.token_count, self.counted_tokens)
            out.append(f"token budget exceeded ({used} > {self.token_budget})")
        if self.missing:
            out.append(f"missed {len(self.missing)}/{len(self.expected)} expected")
        if self.forbidden_hits:
            out.append(f"{self.forbidden_hits} forbidden item(s)")
        if self.expect_empty and self.returned:
            out.append(f"expected empty, got {len(self.returned)}")
        else:
            extra = sum(1 for r in self.returned if r.verdict in ("unexpected", "unknown"))
            if extra:
                out.append(f"{extra} unexpected item(s)")
        return out

    @property
    def severity(self) -> int:
        """Sort key for the misses table: higher is worse."""
        score = 0
        if self.cross_tenant or self.cross_user:
            score += 1000
        if not self.budget_ok:
            score += 500
        if self.recall is not None:
            score += round((1.0 - self.recall) * 100)
        if self.forbidden_hits:
            score += 50
        if self.expect_empty and self.returned:
            score += 40
        if self.precision is not None:
            score += round((1.0 - self.precision) * 20)
        return score

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tags": list(self.tags),
            "query": self.query,
            "rubric": self.rubric,
            "expect_empty": self.expect_empty,
            "expected": list(self.expected),
            "found": list(self.found),
            "missing": list(self.missing),
            "returned": [
                {"content": r.content, "kind": r.kind, "score": r.score, "verdict": r.verdict}
                for r in self.returned
            ],
            "recall": self.recall,
            "precision": self.precision,
            "latency_ms": round(self.latency_ms, 3),
            "token_count": self.token_count,
            "counted_tokens": self.counted_tokens,
            "token_budget": self.token_budget,
            "budget_ok": self.budget_ok,
            "degraded": self.degraded,
            "problems": self.problems,
        }


@dataclass(frozen=True, slots=True)
class TagSummary:
    """Metrics over the cases carrying one tag."""

    tag: str
    cases: int
    perfect: int
    recall: float | None
    precision: float | None


@dataclass(frozen=True, slots=True)
class KindSummary:
    """Calibration of one kind of content (memory, chat_message, tool_output,
    document_chunk): how many of its expected items came back, and how often the items of
    that kind that came back were right, beside their mean score (a calibrated score
    should be close to that share)."""

    kind: str
    expected: int
    found: int
    returned: int
    relevant: int
    mean_score: float | None

    @property
    def recall(self) -> float | None:
        return self.found / self.expected if self.expected else None

    @property
    def precision(self) -> float | None:
        return self.relevant / self.returned if self.returned else None


@dataclass(frozen=True)
class GoldenReport:
    """What :func:`run_golden` returns: aggregate metrics, the verdict and every case.

    Example:
        >>> report.passed, report.reasons  # doctest: +SKIP
        (False, ['Recall@5 0.742 < 0.8'])
    """

    dataset: str
    version: str
    top_k: int
    cases: tuple[CaseResult, ...] = field(repr=False)
    thresholds: Thresholds
    embedder: str
    duration_s: float
    started_at: str
    recall_at_k: float | None
    precision_at_k: float | None
    latency_p50_ms: float
    latency_p95_ms: float
    token_budget_compliance: float
    budget_violations: int
    cross_user_violations: int
    cross_tenant_violations: int
    forbidden_hits: int
    expect_empty_pass_rate: float | None
    degraded_recalls: int
    passed: bool
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    by_tag: tuple[TagSummary, ...] = field(default=(), repr=False)
    by_kind: tuple[KindSummary, ...] = field(default=(), repr=False)

    @property
    def misses(self) -> list[CaseResult]:
        """Cases with any problem, worst first."""
        return sorted((c for c in self.cases if c.problems), key=lambda c: (-c.severity, c.id))

    def metrics(self) -> dict[str, float]:
        """The numeric metrics (for MLflow and dashboards); n/a values are left out."""
        values: dict[str, float | None] = {
            "recall_at_5" if self.top_k == 5 else f"recall_at_{self.top_k}": self.recall_at_k,
            "precision_at_5" if self.top_k == 5 else f"precision_at_{self.top_k}": (
                self.precision_at_k
            ),
            "latency_p50_ms": self.latency_p50_ms,
            "latency_p95_ms": self.latency_p95_ms,
            "token_budget_compliance": self.token_budget_compliance,
            "budget_violations": float(self.budget_violations),
            "cross_user_violations": float(self.cross_user_violations),
            "cross_tenant_violations": float(self.cross_tenant_violations),
            "forbidden_hits": float(self.forbidden_hits),
            "expect_empty_pass_rate": self.expect_empty_pass_rate,
            "cases": float(len(self.cases)),
            "perfect_cases": float(sum(1 for c in self.cases if not c.problems)),
            "passed": 1.0 if self.passed else 0.0,
        }
        return {k: float(v) for k, v in values.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report (``agentmem eval --json`` prints this)."""
        return {
            "dataset": self.dataset,
            "version": self.version,
            "started_at": self.started_at,
            "duration_s": round(self.duration_s, 3),
            "embedder": self.embedder,
            "top_k": self.top_k,
            "passed": self.passed,
            "reasons": list(self.reasons),
            "warnings": list(self.warnings),
            "thresholds": {
                "min_recall": self.thresholds.min_recall,
                "min_precision": self.thresholds.min_precision,
                "max_latency_p95_ms": self.thresholds.max_latency_p95_ms,
            },
            "metrics": {
                "cases": len(self.cases),
                "perfect_cases": sum(1 for c in self.cases if not c.problems),
                "recall_at_k": self.recall_at_k,
                "precision_at_k": self.precision_at_k,
                "latency_p50_ms": round(self.latency_p50_ms, 3),
                "latency_p95_ms": round(self.latency_p95_ms, 3),
                "token_budget_compliance": self.token_budget_compliance,
                "budget_violations": self.budget_violations,
                "cross_user_violations": self.cross_user_violations,
                "cross_tenant_violations": self.cross_tenant_violations,
                "forbidden_hits": self.forbidden_hits,
                "expect_empty_pass_rate": self.expect_empty_pass_rate,
                "degraded_recalls": self.degraded_recalls,
            },
            "by_tag": [
                {
                    "tag": t.tag,
                    "cases": t.cases,
                    "perfect": t.perfect,
                    "recall": t.recall,
                    "precision": t.precision,
                }
                for t in self.by_tag
            ],
            "by_kind": [
                {
                    "kind": k.kind,
                    "expected": k.expected,
                    "found": k.found,
                    "recall": k.recall,
                    "returned": k.returned,
                    "relevant": k.relevant,
                    "precision": k.precision,
                    "mean_score": k.mean_score,
                }
                for k in self.by_kind
            ],
            "misses": [c.id for c in self.misses],
            "cases": [c.to_dict() for c in self.cases],
        }

    def to_json(self, *, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent)

    def summary_rows(self) -> list[tuple[str, str, str, str]]:
        """(metric, value, threshold, status) rows shared by the rich and Markdown renderings."""
        t = self.thresholds
        rows: list[tuple[str, str, str, str]] = []

        def status(ok: bool | None, blocking: bool = True) -> str:
            if ok is None:
                return "n/a"
            if ok:
                return "PASS"
            return "FAIL" if blocking else "WARN"

        k = self.top_k
        rows.append(
            (
                f"Recall@{k}",
                fmt(self.recall_at_k),
                f">= {t.min_recall}",
                status(None if self.recall_at_k is None else self.recall_at_k >= t.min_recall),
            )
        )
        rows.append(
            (
                f"Precision@{k}",
                fmt(self.precision_at_k),
                f">= {t.min_precision}",
                status(
                    None if self.precision_at_k is None else self.precision_at_k >= t.min_precision
                ),
            )
        )
        rows.append(
            (
                "Latency p50 / p95",
                f"{self.latency_p50_ms:.1f} / {self.latency_p95_ms:.1f} ms",
                f"p95 <= {t.max_latency_p95_ms:g} ms (warn)",
                status(self.latency_p95_ms <= t.max_latency_p95_ms, blocking=False),
            )
        )
        rows.append(
            (
                "Token budget compliance",
                f"{self.token_budget_compliance:.1%} ({self.budget_violations} over)",
                "100%",
                status(self.budget_violations == 0),
            )
        )
        rows.append(
            (
                "Cross-user items",
                str(self.cross_user_violations),
                "0",
                status(self.cross_user_violations == 0),
            )
        )
        rows.append(
            (
                "Cross-tenant items",
                str(self.cross_tenant_violations),
                "0",
                status(self.cross_tenant_violations == 0),
            )
        )
        rows.append(("expect_empty pass rate", fmt(self.expect_empty_pass_rate), "(info)", ""))
        rows.append(("Forbidden items returned", str(self.forbidden_hits), "(info)", ""))
        perfect = sum(1 for c in self.cases if not c.problems)
        rows.append(("Perfect cases", f"{perfect}/{len(self.cases)}", "(info)", ""))
        return rows


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(
    results: Sequence[CaseResult],
    *,
    dataset: GoldenDataset,
    thresholds: Thresholds,
    top_k: int = TOP_K,
    embedder: str = "",
    duration_s: float = 0.0,
    started_at: str = "",
) -> GoldenReport:
    """Aggregate per-case results into a :class:`GoldenReport` with the pass/fail verdict."""
    recall = _mean([c.recall for c in results if c.recall is not None])
    precision = _mean([c.precision for c in results if c.precision is not None])
    latencies = [c.latency_ms for c in results]
    budget_violations = sum(1 for c in results if not c.budget_ok)
    cross_user = sum(c.cross_user for c in results)
    cross_tenant = sum(c.cross_tenant for c in results)
    forbidden = sum(c.forbidden_hits for c in results)
    empties = [c for c in results if c.expect_empty]
    empty_rate = _mean([1.0 if not c.returned else 0.0 for c in empties])
    p50 = percentile(latencies, 0.50)
    p95 = percentile(latencies, 0.95)

    reasons: list[str] = []
    if recall is not None and recall < thresholds.min_recall:
        reasons.append(f"Recall@{top_k} {recall:.3f} < {thresholds.min_recall}")
    if precision is not None and precision < thresholds.min_precision:
        reasons.append(f"Precision@{top_k} {precision:.3f} < {thresholds.min_precision}")
    if cross_user:
        cases = sorted({c.id for c in results if c.cross_user})
        reasons.append(f"{cross_user} cross-user item(s) returned in {', '.join(cases)}")
    if cross_tenant:
        cases = sorted({c.id for c in results if c.cross_tenant})
        reasons.append(f"{cross_tenant} cross-tenant item(s) returned in {', '.join(cases)}")
    if budget_violations:
        cases = sorted(c.id for c in results if not c.budget_ok)
        reasons.append(f"{budget_violations} recall(s) over their token budget: {', '.join(cases)}")
    warnings: list[str] = list(dataset.warnings)
    if p95 > thresholds.max_latency_p95_ms:
        warnings.append(
            f"latency p95 {p95:.1f} ms > {thresholds.max_latency_p95_ms:g} ms (not blocking)"
        )
    if forbidden:
        cases = sorted({c.id for c in results if c.forbidden_hits})
        warnings.append(f"{forbidden} forbidden item(s) returned in {', '.join(cases)}")
    if empty_rate is not None and empty_rate < 1.0:
        failed = sorted(c.id for c in empties if c.returned)
        warnings.append(
            f"{len(failed)} of {len(empties)} expect_empty case(s) returned items: "
            + ", ".join(failed)
        )
    degraded = sum(1 for c in results if c.degraded)
    if degraded:
        warnings.append(f"{degraded} recall(s) were degraded (indexing had not caught up)")

    tag_names: dict[str, None] = {}
    for c in results:
        for t in c.tags:
            tag_names.setdefault(t, None)
    by_tag = []
    for tag in sorted(tag_names):
        tagged = [c for c in results if tag in c.tags]
        by_tag.append(
            TagSummary(
                tag=tag,
                cases=len(tagged),
                perfect=sum(1 for c in tagged if not c.problems),
                recall=_mean([c.recall for c in tagged if c.recall is not None]),
                precision=_mean([c.precision for c in tagged if c.precision is not None]),
            )
        )
    return GoldenReport(
        by_kind=kind_summaries(results),
        dataset=dataset.source,
        version=dataset.version,
        top_k=top_k,
        cases=tuple(results),
        thresholds=thresholds,
        embedder=embedder,
        duration_s=duration_s,
        started_at=started_at,
        recall_at_k=recall,
        precision_at_k=precision,
        latency_p50_ms=p50,
        latency_p95_ms=p95,
        token_budget_compliance=(
            (len(results) - budget_violations) / len(results) if results else 1.0
        ),
        budget_violations=budget_violations,
        cross_user_violations=cross_user,
        cross_tenant_violations=cross_tenant,
        forbidden_hits=forbidden,
        expect_empty_pass_rate=empty_rate,
        degraded_recalls=degraded,
        passed=not reasons,
        reasons=tuple(reasons),
        warnings=tuple(warnings),
        by_tag=tuple(by_tag),
    )


def kind_summaries(results: Sequence[CaseResult]) -> tuple[KindSummary, ...]:
    """Per kind of content: expected items found, and returned items right vs their scores."""
    kinds: dict[str, list[int]] = {}
    scores: dict[str, list[float]] = {}
    for c in results:
        found = set(c.found)
        for content, kind in zip(c.expected, c.expected_kinds, strict=False):
            row = kinds.setdefault(kind, [0, 0, 0, 0])
            row[0] += 1
            row[1] += content in found
        for r in c.returned:
            row = kinds.setdefault(r.kind, [0, 0, 0, 0])
            row[2] += 1
            row[3] += r.verdict == "expected"
            scores.setdefault(r.kind, []).append(r.score)
    return tuple(
        KindSummary(kind, e, f, n, rel, _mean(scores.get(kind, [])))
        for kind, (e, f, n, rel) in sorted(kinds.items())
    )
