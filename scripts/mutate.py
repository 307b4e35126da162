#!/usr/bin/env python3
# scripts/mutate.py - mutation testing of src/ (run through scripts/mutate.sh).
#
# 1. The test map (build-cov/testmap.json): which lines of src/ each test of
#    the unit, conformance and fault suites executes, and how long it runs:
#    each test alone in the coverage tree (build-cov, scripts/coverage.sh),
#    then gcov's JSON.  Made again when src/ or tests/ changed, or with --remap.
# 2. The mutants: every site in src/**/*.c (not the preload shim, which real
#    programs test) where an operator applies - flip a comparison, drop a
#    '!', + 1 <-> - 1, && <-> ||, delete a statement, return early from a
#    void function - drawn in the order of a hash of --seed and what each
#    mutant is (file, operator, the line before and after), which code
#    changed elsewhere leaves as it was.
# 3. Each mutant: the file changed in a copy of the sources (build-mut/tree),
#    only its objects and the covering tests' executables rebuilt (Ninja,
#    -O0, which builds fastest, with the debug checks, ASan and UBSan on, as
#    the sanitizer tree runs the suite: a leak or an overrun a mutant makes
#    is a failure there too), then the tests that execute the mutated line -
#    the file's own test alone first, then the others four at a time (built,
#    then run two at a time), those that run most of the file first, each
#    test's executable run directly - stopping at the first failure or
#    timeout (each test 15 s plus ten times its own time in the map), which
#    kills it.  A mutant that does not compile is stillborn: not counted, the
#    next one in the seed's order drawn in its place, so N mutants are run.
#    One on a line gcov saw no test execute is run against the tests of its
#    file (gcov misses what a forked child runs); if none fails it survives.
# Results go to build-mut/results.jsonl as they come (a run can be resumed:
# mutants already there are not run again); the summary - killed / (run +
# uncovered) and the survivors with file:line, operator and the two lines -
# to stdout and build-mut/summary.txt.
import argparse, glob, hashlib, json, os, re, shutil, signal, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COV = os.path.join(ROOT, "build-cov")
MUT = os.path.join(ROOT, "build-mut")
TREE = os.path.join(MUT, "tree")
BUILD = os.path.join(MUT, "build")
LABELS = "unit|conformance|fault"
TEST_RE = re.compile(r"^(unit|conformance|fault)/test_\w+$")  # an executable of tests/


def sh(cmd, **kw):
    return subprocess.run(cmd, shell=isinstance(cmd, str), **kw)


# ---------------------------------------------------------------- test map

def list_tests(build):
    out = sh(["ctest", "-N", "-L", LABELS], cwd=build, capture_output=True, text=True).stdout
    return [m.group(1) for m in re.finditer(r"Test\s+#\d+: (\S+)", out)]


def lines_executed(build):
    """{src-relative file: set(lines)} from every .gcda of the library's objects."""
    gcdas = glob.glob(os.path.join(build, "CMakeFiles/memcg_obj.dir/src/**/*.gcda"), recursive=True)
    hit = {}
    for g in gcdas:
        out = sh(["gcov", "--json-format", "--stdout", g], cwd=os.path.dirname(g),
                 capture_output=True, text=True).stdout
        for doc in out.splitlines():
            if not doc.startswith("{"):
                continue
            for f in json.loads(doc)["files"]:
                path = os.path.relpath(os.path.join(ROOT, f["file"]) if not os.path.isabs(f["file"])
                                       else f["file"], ROOT)
                if not path.startswith("src/"):
                    continue
                s = hit.setdefault(path, set())
                s.update(l["line_number"] for l in f["lines"] if l["count"] > 0)
    return hit


def make_map():
    if not os.path.isdir(COV):
        sys.exit("mutate: no build-cov (run scripts/coverage.sh first)")
    sh(["cmake", "--build", COV, "-j", "2"], check=True, stdout=subprocess.DEVNULL)
    tests = list_tests(COV)
    tmap = {}
    for i, t in enumerate(tests):
        for g in glob.glob(os.path.join(COV, "**/*.gcda"), recursive=True):
            os.unlink(g)
        t0 = time.time()
        r = sh(["ctest", "-R", "^" + re.escape(t) + "$", "--timeout", "900"], cwd=COV,
               capture_output=True, text=True)
        dt = time.time() - t0
        hit = lines_executed(COV)
        tmap[t] = {"seconds": round(dt, 2), "ok": r.returncode == 0,
                   "lines": {f: sorted(v) for f, v in hit.items()}}
        print(f"map {i + 1}/{len(tests)} {t}: {dt:.1f} s, {sum(len(v) for v in hit.values())} lines",
              flush=True)
    json.dump(tmap, open(os.path.join(COV, "testmap.json"), "w"))
    open(os.path.join(COV, "testmap.src"), "w").write(src_hash() + "\n")
    return tmap


def src_hash():
    """The hash of src/ and tests/ the map was made from: lines move as they change."""
    h = hashlib.sha1()
    for p in sorted(glob.glob(os.path.join(ROOT, "src/**/*.[ch]"), recursive=True) +
                    glob.glob(os.path.join(ROOT, "tests/**/*.[ch]"), recursive=True)):
        h.update(p.encode())
        h.update(open(p, "rb").read())
    return h.hexdigest()


def load_map(remap):
    mp, hp = os.path.join(COV, "testmap.json"), os.path.join(COV, "testmap.src")
    if (remap or not os.path.exists(mp) or not os.path.exists(hp) or
            open(hp).read().strip() != src_hash()):
        return make_map()
    return json.load(open(mp))


# ---------------------------------------------------------------- mutants

# a declaration ("type name;", "type *name[N];"): no statement to delete
DECL_RE = re.compile(r"^[A-Za-z_][\w\s\*]*[\s\*]\w+(\s*\[[^\]]*\])?;$")
CMP = {"<": ">=", ">": "<=", "<=": ">", ">=": "<", "==": "!=", "!=": "=="}
CMP_RE = re.compile(r"(?<![<>=!&|+\-*/%^])(<=|>=|==|!=|<|>)(?![<>=])")
NOT_RE = re.compile(r"!(?!=)")
PM_RE = re.compile(r"([+-]) 1\b")
LOGIC_RE = re.compile(r"&&|\|\|")
STMT_SKIP = re.compile(r"^\s*(return|break|continue|goto|case|default|if|else|for|while|do|switch|"
                       r"static|const|struct|enum|union|typedef|unsigned|signed|int|long|short|"
                       r"char|bool|void|size_t|ssize_t|uint\w*|int\w*|uintptr_t|mcg_\w+_t\b|"
                       r"[A-Z_]+:|#|\}|\{)")


def code_mask(lines):
    """Per line: the text with comments and string/char literals blanked (same length)."""
    out, in_comment = [], False
    for line in lines:
        s, i, res = line, 0, []
        while i < len(s):
            if in_comment:
                j = s.find("*/", i)
                if j < 0:
                    res.append(" " * (len(s) - i)); i = len(s)
                else:
                    res.append(" " * (j + 2 - i)); i = j + 2; in_comment = False
            elif s.startswith("/*", i):
                in_comment = True
            elif s.startswith("//", i):
                res.append(" " * (len(s) - i)); i = len(s)
            elif s[i] in "\"'":
                q, j = s[i], i + 1
                while j < len(s) and s[j] != q:
                    j += 2 if s[j] == "\\" else 1
                res.append(" " * (min(j + 1, len(s)) - i)); i = min(j + 1, len(s))
            else:
                res.append(s[i]); i += 1
        out.append("".join(res))
    return out


def sites(path):
    text = open(os.path.join(ROOT, path)).read().split("\n")
    code = code_mask(text)
    res = []
    void_fn = False
    for n, (orig, c) in enumerate(zip(text, code), start=1):
        if c.lstrip().startswith("#") or not c.strip():
            continue
        # a function definition: its signature starts at column 0
        if re.match(r"^(static\s+|mcg_\w+\s+)*void\s+\w+\(", c) and not c.rstrip().endswith(";"):
            void_fn = True
        elif c.startswith("{") and void_fn:
            res.append((n, "return-early", 1, orig + " return;"))
            void_fn = False
            continue
        elif not c.startswith(" ") and not c.startswith("\t"):
            void_fn = False
        in_macro = "MCG_BUG_ON" in c or "_Static_assert" in c
        if in_macro:
            continue
        for m in CMP_RE.finditer(c):
            op = m.group(1)
            # skip the arrow operator and pointer/shift forms caught by the lookarounds
            if op in ("<", ">") and (c[m.start() - 1:m.start()] == "-" or "#include" in c):
                continue
            res.append((n, "cmp " + op + "->" + CMP[op], m.start(),
                        orig[:m.start()] + CMP[op] + orig[m.end():]))
        for m in NOT_RE.finditer(c):
            res.append((n, "drop !", m.start(), orig[:m.start()] + orig[m.start() + 1:]))
        for m in PM_RE.finditer(c):
            o = "-" if m.group(1) == "+" else "+"
            res.append((n, m.group(1) + "1->" + o + "1", m.start(),
                        orig[:m.start()] + o + orig[m.start() + 1:]))
        for m in LOGIC_RE.finditer(c):
            o = "||" if m.group(0) == "&&" else "&&"
            res.append((n, m.group(0) + "->" + o, m.start(), orig[:m.start()] + o + orig[m.end():]))
        st = c.strip()
        prev = next((p.strip() for p in reversed(code[:n - 1]) if p.strip()), "")
        if (st.endswith(";") and c.startswith("\t") and not STMT_SKIP.match(st)
                and not DECL_RE.match(st)
                and st.count("(") == st.count(")") and prev[-1:] in (";", "{", "}")):
            indent = orig[:len(orig) - len(orig.lstrip())]
            res.append((n, "delete statement", 0, indent + ";"))
    return res


def all_mutants():
    files = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "src/**/*.c"),
                                                                 recursive=True)
                   if "/preload/" not in p)
    out = []
    for f in files:
        text = open(os.path.join(ROOT, f)).read().split("\n")
        seen = {}
        for (line, op, col, new) in sites(f):
            # what the mutant is, not where: its file, operator, column and
            # the line before and after (the n-th such one in the file)
            key = f"{f}:{op}:{col}:{text[line - 1].strip()}:{new.strip()}"
            seen[key] = seen.get(key, 0) + 1
            out.append({"file": f, "line": line, "op": op, "col": col, "new": new,
                        "key": f"{key}:{seen[key]}"})
    return out


def mutant_id(m):
    return hashlib.sha1(m["key"].encode()).hexdigest()[:12]


def draw(muts, seed):
    """The mutants in the seed's order: by a hash of the seed and what each
    mutant is, so that code added or removed elsewhere (a line moved, dead
    code gone) leaves every other mutant's place in the order as it was."""
    return sorted(muts, key=lambda m: hashlib.sha1(f"{seed}:{m['key']}".encode()).digest())


# ---------------------------------------------------------------- running

def prepare_tree():
    """build-mut/tree: the sources as they are (unchanged files untouched: nothing rebuilds needlessly)."""
    os.makedirs(TREE, exist_ok=True)
    for d in ("src", "include", "tests", "bench", "tools", "cmake", "docs"):
        shutil.copytree(os.path.join(ROOT, d), os.path.join(TREE, d), dirs_exist_ok=True,
                        copy_function=copy_if_changed)
    copy_if_changed(os.path.join(ROOT, "CMakeLists.txt"), os.path.join(TREE, "CMakeLists.txt"))
    # Ninja builds the targets a mutant needs in one graph, two links at a
    # time; make would walk each target's dependencies one target after another
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    cache = os.path.join(BUILD, "CMakeCache.txt")
    if gen and os.path.exists(cache) and "CMAKE_GENERATOR:INTERNAL=Ninja" not in open(cache).read():
        shutil.rmtree(BUILD)
    sh(["cmake", "-S", TREE, "-B", BUILD] + gen + ["-DCMAKE_BUILD_TYPE=Debug", "-DCMAKE_C_FLAGS_DEBUG=-O0",
        "-DMCG_DEBUG=ON", "-DMCG_SANITIZE=address,undefined", "-DMCG_BUILD_EXAMPLES=OFF"],
       check=True, stdout=subprocess.DEVNULL)


def copy_if_changed(src, dst):
    """A file copied only when it changed, and then with a new mtime: its
    objects in the tree may be newer than the source's own mtime."""
    try:
        if open(src, "rb").read() == open(dst, "rb").read():
            return dst
    except OSError:
        pass
    return shutil.copy(src, dst)


def target_of(test):
    d, name = test.split("/", 1)
    return f"{d}_{name}"


def test_specs():
    """{test: (argv, env, cwd)} of the unit, conformance and fault tests in BUILD, from ctest."""
    out = sh(["ctest", "--show-only=json-v1", "-L", LABELS], cwd=BUILD, capture_output=True,
             text=True, check=True).stdout
    specs = {}
    for t in json.loads(out)["tests"]:
        if not TEST_RE.match(t["name"]):
            continue
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1",
                   UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
        env.update(kv.split("=", 1) for kv in props.get("ENVIRONMENT", []))
        argv = t.get("command") or [os.path.join(BUILD, "tests", target_of(t["name"]))]
        specs[t["name"]] = (argv, env, props.get("WORKING_DIRECTORY", os.path.join(BUILD, "tests")),
                            props.get("SKIP_RETURN_CODE"))
    return specs


def test_limit(tmap, t):
    """Seconds a correct build of test t is given: its own time in the coverage
    tree (gcov's counters make that slower than this -O0 tree) ten times over
    and 15 s more, for a machine shared with other work."""
    return 15 + 10 * tmap[t]["seconds"]


def run_tests(batch, tmap, specs):
    """Runs batch two at a time; returns (test, how) of the first failure, or None."""
    pending, running = list(batch), []
    try:
        while pending or running:
            while pending and len(running) < 2:
                t = pending.pop(0)
                argv, env, cwd, skip = specs[t]
                p = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
                running.append((t, p, time.time() + test_limit(tmap, t), skip))
            time.sleep(0.02)
            for item in list(running):
                t, p, deadline, skip = item
                rc = p.poll()
                if rc is None:
                    if time.time() > deadline:
                        return t, "timeout"
                    continue
                running.remove(item)
                if rc != 0 and rc != skip:
                    return t, f"exit {rc}" if rc > 0 else f"signal {-rc}"
        return None
    finally:
        for t, p, _, _ in running:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def executes(hit, m, lines):
    """Whether a test that ran lines @hit of the file executes mutant @m's line.
    A return inserted after a function's "{": whether it enters the function
    (gcov counts the entry on the line of its name, and an always-inline
    function's on its first statement only)."""
    if m["op"] != "return-early":
        return m["line"] in hit
    first = m["line"] - 1
    while first > 1 and lines[first - 1][:1] in (" ", "\t"):
        first -= 1  # the signature's first line
    return any(n in hit for n in list(range(first, m["line"])) + [m["line"] + 1])


def run_mutant(m, tmap, specs):
    path = os.path.join(TREE, m["file"])
    orig = open(path).read()
    lines = orig.split("\n")
    covering = [t for t, v in tmap.items() if TEST_RE.match(t) and t in specs and
                executes(v["lines"].get(m["file"], []), m, lines)]
    res = dict(m, id=mutant_id(m), old=lines[m["line"] - 1])
    if not covering:
        # gcov sees no test there, but it misses what a forked child runs
        # (it exits without writing its counters): the tests that run any
        # line of the file; none fails, and it survives as uncovered
        covering = [t for t, v in tmap.items() if TEST_RE.match(t) and t in specs and
                    v["lines"].get(m["file"])]
        res["uncovered"] = True
        if not covering:
            res.update(status="survived", reason="no test executes the line")
            return res
    base = os.path.splitext(os.path.basename(m["file"]))[0]
    # the file's own test, then those that run most of the file, then the fastest
    covering.sort(key=lambda t: (not t.endswith("/test_" + base),
                                 -len(tmap[t]["lines"].get(m["file"], [])), tmap[t]["seconds"]))
    lines[m["line"] - 1] = m["new"]
    try:
        open(path, "w").write("\n".join(lines))
        # the library first: a mutant that does not compile costs one object;
        # then the file's own test alone (it kills most), then the rest
        b = sh(["cmake", "--build", BUILD, "-j", "2", "--target", "memcg_static"],
               capture_output=True, text=True)
        if b.returncode != 0:
            res.update(status="stillborn")
            return res
        own = [t for t in covering if t.endswith("/test_" + base)]
        rest = [t for t in covering if t not in own]
        # built and run a few at a time: most mutants die in the first tests,
        # and each test's executable is a link of its own
        for batch in ([own] if own else []) + [rest[i:i + 4] for i in range(0, len(rest), 4)]:
            b = sh(["cmake", "--build", BUILD, "-j", "2", "--target"] +
                   [target_of(t) for t in batch], capture_output=True, text=True)
            if b.returncode != 0:
                res.update(status="stillborn")
                return res
            failed = run_tests(batch, tmap, specs)
            if failed:
                res.update(status="killed", by=f"{failed[0]} ({failed[1]})",
                           timeout=failed[1] == "timeout")
                return res
        res.update(status="survived",
                   reason=("no test executes the line (gcov); the file's " if res.get("uncovered")
                           else "") + f"{len(covering)} tests pass")
        return res
    finally:
        open(path, "w").write(orig)


def summary(results, out, seed):
    counted = [r for r in results if r["status"] != "stillborn"]
    killed = [r for r in counted if r["status"] == "killed"]
    surv = [r for r in counted if r["status"] == "survived"]
    still = len(results) - len(counted)
    pct = 100.0 * len(killed) / len(counted) if counted else 0.0
    commit = sh(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                text=True).stdout.strip()
    dirty = sh(["git", "status", "--porcelain", "--", "src", "tests"], cwd=ROOT,
               capture_output=True, text=True).stdout.strip()
    lines = [f"commit {commit}{' (src/ or tests/ changed)' if dirty else ''}, seed {seed}",
             f"mutants: {len(results)} ({still} stillborn, not counted); killed {len(killed)} of "
             f"{len(counted)}: {pct:.1f} %; survived {len(surv)} "
             f"({sum(1 for r in surv if r.get('uncovered'))} on lines gcov saw no test run)"]
    per = {}
    for r in counted:
        k = per.setdefault(r["file"], [0, 0])
        k[0] += r["status"] == "killed"; k[1] += 1
    for f in sorted(per):
        lines.append(f"  {f:32} {per[f][0]:3}/{per[f][1]:<3}")
    if surv:
        lines.append("survivors:")
    for r in sorted(surv, key=lambda r: (r["file"], r["line"])):
        lines.append(f"  {r['id']} {r['file']}:{r['line']} [{r['op']}] ({r.get('reason', '')})")
        lines.append(f"      - {r['old'].strip()}")
        lines.append(f"      + {r['new'].strip()}")
    text = "\n".join(lines)
    print(text)
    open(out, "w").write(text + "\n")
    return pct


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("n", type=int)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--remap", action="store_true")
    ap.add_argument("--only", help="regex over file paths")
    ap.add_argument("--list", action="store_true", help="print the drawn mutants and stop")
    ap.add_argument("--rerun-survivors", nargs="?", const=".", metavar="REGEX",
                    help="run again the survivors results.jsonl holds (after new tests), "
                         "those in files matching REGEX if given")
    a = ap.parse_args()
    # killed: unwind, so that the mutated file is put back and tests stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    muts = all_mutants()
    if a.only:
        muts = [m for m in muts if re.search(a.only, m["file"])]
    muts = draw(muts, a.seed)
    if a.list:
        for m in muts[:a.n]:
            print(f"{m['file']}:{m['line']} [{m['op']}] {m['new'].strip()}")
        return 0
    tmap = load_map(a.remap)
    prepare_tree()
    specs = test_specs()
    # every test built once: a mutant then relinks only the tests it runs
    sh(["cmake", "--build", BUILD, "-j", "2", "--target"] +
       [target_of(t) for t in specs if t in tmap], check=True, stdout=subprocess.DEVNULL)
    os.makedirs(MUT, exist_ok=True)
    rpath = os.path.join(MUT, "results.jsonl")
    done = {}
    if os.path.exists(rpath):
        for l in open(rpath):
            r = json.loads(l)
            done[r["id"]] = r
    # N mutants run: drawn in the seed's order until N have been run (a
    # stillborn one is not counted, the next one drawn in its place)
    results, counted, t_start = [], 0, time.time()
    with open(rpath, "a") as log:
        for m in muts:
            if counted >= a.n:
                break
            mid = mutant_id(m)
            r = done.get(mid)
            # a result is reused only for the same change of the same line,
            # and a survivor only without --rerun-survivors (new tests may kill it)
            if (r is None or r["new"] != m["new"] or
                    r["old"] != open(os.path.join(ROOT, m["file"])).read().split("\n")[m["line"] - 1]
                    or (a.rerun_survivors and r["status"] == "survived" and
                        re.search(a.rerun_survivors, m["file"]))):
                t0 = time.time()
                r = run_mutant(m, tmap, specs)
                r["seconds"] = round(time.time() - t0, 1)
                log.write(json.dumps(r) + "\n"); log.flush()
                print(f"[{counted + 1}/{a.n}] {r['status']:9} {m['file']}:{m['line']} [{m['op']}]"
                      f" {r.get('by', '')} {r['seconds']} s", flush=True)
            results.append(dict(r, line=m["line"]))  # where the line is now
            counted += r["status"] != "stillborn"
    print(f"mutate: {time.time() - t_start:.0f} s", flush=True)
    # the tree back as the sources are
    prepare_tree()
    summary(results, os.path.join(MUT, "summary.txt"), a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
