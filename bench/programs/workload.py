# SPDX-License-Identifier: MIT
# bench/programs/workload.py - the python3 program of `memcg bench programs`.
#
# A service-like mix of what Python programs spend their allocations on:
# dicts of records, strings built, split and joined, JSON encoded and
# decoded, records sorted and grouped, and worker threads that do the same
# on their own share of the records (the GIL serialises them, but each
# thread allocates and frees on its own, and objects cross threads through
# a queue).  Deterministic for a given SCALE (random.Random with a fixed
# seed; output sorted where order could vary): every allocator must print
# the same lines.
#
# Usage: python3 workload.py SCALE   (records = SCALE; 1000 runs in well
# under a second, 40000 in a few seconds)
import collections
import json
import queue
import random
import sys
import threading

WORDS = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    "india", "juliet", "kilo", "lima", "mike", "november", "oscar", "papa",
    "quebec", "romeo", "sierra", "tango", "uniform", "victor", "whiskey",
    "xray", "yankee", "zulu", "memory", "cgroup", "slab", "page", "reclaim",
]


def make_record(rng, i):
    words = [rng.choice(WORDS) for _ in range(rng.randint(3, 12))]
    return {
        "id": i,
        "user": "user-%05d" % rng.randint(0, 9999),
        "title": " ".join(words).capitalize(),
        "tags": sorted(set(rng.sample(WORDS, rng.randint(1, 5)))),
        "score": round(rng.random() * 100.0, 3),
        "counts": [rng.randint(0, 1000) for _ in range(rng.randint(1, 8))],
        "meta": {"shard": i % 17, "flags": rng.getrandbits(16),
                 "path": "/".join(rng.choice(WORDS) for _ in range(3))},
    }


def text_stats(lines):
    counts = collections.Counter()
    lengths = collections.defaultdict(int)
    for line in lines:
        for w in line.lower().replace(",", " ").split():
            counts[w] += 1
            lengths[len(w)] += 1
    return counts, lengths


def worker(chunk, out):
    # Round-trip through JSON, rebuild, and summarise: the thread's own garbage.
    encoded = [json.dumps(r, sort_keys=True) for r in chunk]
    decoded = [json.loads(s) for s in encoded]
    by_shard = collections.defaultdict(list)
    for r in decoded:
        r["title_upper"] = r["title"].upper()
        r["csv"] = ",".join(str(c) for c in r["counts"])
        by_shard[r["meta"]["shard"]].append(r)
    summary = {}
    for shard, rs in by_shard.items():
        rs.sort(key=lambda r: (-r["score"], r["id"]))
        summary[shard] = (len(rs), rs[0]["id"], sum(len(r["csv"]) for r in rs))
    out.put((chunk[0]["id"] if chunk else -1, summary, sum(len(s) for s in encoded)))


def main():
    scale = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    rng = random.Random(20240601)
    records = [make_record(rng, i) for i in range(scale)]

    # Strings: a report built line by line, then taken apart again.
    lines = ["%(id)d\t%(user)s\t%(title)s\t%(score).3f\t%(tags)s" %
             dict(r, tags=",".join(r["tags"])) for r in records]
    blob = "\n".join(lines)
    back = [l.split("\t") for l in blob.split("\n")]
    assert len(back) == scale
    counts, lengths = text_stats(r[2] for r in back)

    # JSON: the whole document at once, and per record.
    doc = json.dumps({"records": records}, sort_keys=True)
    again = json.loads(doc)["records"]
    assert again == records

    # An index: tag -> users -> ids, then the busiest users.
    index = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in records:
        for t in r["tags"]:
            index[t][r["user"]].append(r["id"])
    busiest = sorted(((len(ids), t, u) for t, users in index.items()
                      for u, ids in users.items()), reverse=True)[:5]

    # Threads: four workers on interleaved shares, results through a queue.
    out = queue.Queue()
    threads = [threading.Thread(target=worker, args=(records[k::4], out))
               for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    results = sorted(out.get() for _ in threads)

    # Churn: a bounded dict used as a cache of formatted strings.
    cache = collections.OrderedDict()
    hits = 0
    for i in range(scale * 4):
        key = rng.randint(0, scale // 2 + 1)
        if key in cache:
            cache.move_to_end(key)
            hits += 1
        else:
            cache[key] = ("entry-%d-" % key) * rng.randint(1, 20)
            if len(cache) > scale // 8 + 1:
                cache.popitem(last=False)

    print("records", scale, "doc", len(doc), "words", sum(counts.values()))
    print("top", sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
    print("lengths", sorted(lengths.items())[:5])
    print("busiest", busiest)
    for first, summary, nbytes in results:
        print("thread", first, nbytes, sorted(summary.items())[:3])
    print("cache", len(cache), "hits", hits)


if __name__ == "__main__":
    main()
