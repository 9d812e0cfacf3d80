"""A client's own test suite against `odm serve` (pymongo's, MongoEngine's): reads the suite's
JUnit reports and compares them with the expected-results file
(tests/wire/pymongo-expected.txt, tests/wire/mongoengine-expected.txt).

    pymongo_results.py [--suite NAME] check EXPECTED REPORT.xml...   exit 1 when one differs
    pymongo_results.py [--suite NAME] write EXPECTED REPORT.xml...   rewrite EXPECTED from them

NAME names the suite in the messages (`pymongo` unless given).

The expected-results file has one entry a line, `OUTCOME ID  # reason`:
  - OUTCOME is `pass`, `fail` (a known failure), `skip` (the suite skips it: the reason is
    the suite's), `exclude` (not run at all; the suite's script, pymongo.sh or mongoengine.sh,
    deselects it) or `ignore` (run, any result accepted: for a test whose result depends on
    timing).
  - ID is a test (`test/test_x.py::Class::test_y`, `tests/document/test_x.py::Class::test_y`),
    a class or a file: a test takes the entry of its longest listed prefix. Every test must be
    covered by some entry.
  - A `fail` or `skip` carries its reason; `write` keeps reasons already written by hand for
    the same entry and fills new ones from the failure or skip message.

`check` fails on a test expected to pass (or to be skipped) that failed, on an expected pass
that was skipped, and on a test no entry covers. A known failure or skip that now does better
is reported, not failed on (the file is then stale: run `write`). It prints the counts and the
skips grouped by reason.
"""

import collections
import sys
import xml.etree.ElementTree as ET

OUTCOMES = ("pass", "fail", "skip", "exclude", "ignore")


def test_id(classname, name):
    """`test.test_x.Class` and `test_y` as `test/test_x.py::Class::test_y`, the module being
    the first part named `test_*` (`tests.document.test_x.Class`: `tests/document/test_x.py`
    and its class); a module skipped whole when collected (no class name, the module as the
    name) as `test/test_x.py`."""
    if not classname:
        return name.replace(".", "/") + ".py"
    parts = classname.split(".")
    for i, part in enumerate(parts):
        if part.startswith("test_"):
            module = "/".join(parts[: i + 1]) + ".py"
            return "::".join([module, *parts[i + 1 :], name])
    return "::".join([classname.replace(".", "/") + ".py", name])


def one_line(text, limit=110):
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def read_reports(paths):
    """Each test's outcome and message; a test reported twice keeps its worst outcome."""
    results = {}
    rank = {"pass": 0, "skip": 1, "fail": 2}
    for path in paths:
        try:
            root = ET.parse(path).getroot()
        except (ET.ParseError, OSError) as e:
            sys.exit(f"cannot read the report {path}: {e}")
        for case in root.iter("testcase"):
            tid = test_id(case.get("classname", ""), case.get("name", ""))
            outcome, message = "pass", ""
            for child in case:
                if child.tag in ("failure", "error"):
                    outcome = "fail"
                    message = child.get("message") or (child.text or "").strip().splitlines()[-1:]
                    if isinstance(message, list):
                        message = message[0] if message else child.tag
                    break
                if child.tag == "skipped":
                    outcome, message = "skip", child.get("message") or "skipped"
            before = results.get(tid)
            if before is None or rank[outcome] > rank[before[0]]:
                results[tid] = (outcome, one_line(message))
    return results


def read_expected(path):
    entries = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)
            body = text[0].strip()
            reason = text[1].strip() if len(text) > 1 else ""
            if not body:
                continue
            fields = body.split()
            if len(fields) != 2 or fields[0] not in OUTCOMES:
                sys.exit(f"{path}:{number}: expected `OUTCOME ID  # reason`, got: {line.strip()}")
            outcome, tid = fields
            if tid in entries:
                sys.exit(f"{path}:{number}: {tid} is listed twice")
            if outcome in ("fail", "skip", "exclude", "ignore") and not reason:
                sys.exit(f"{path}:{number}: a `{outcome}` entry needs its reason")
            entries[tid] = (outcome, reason)
    return entries


def prefixes(tid):
    """The test's id, then its class, then its file."""
    parts = tid.split("::")
    return ["::".join(parts[:n]) for n in range(len(parts), 0, -1)]


def entry_for(entries, tid):
    for prefix in prefixes(tid):
        if prefix in entries:
            return prefix, entries[prefix]
    return None, None


def check(expected_path, reports, suite):
    entries = read_expected(expected_path)
    results = read_reports(reports)
    counts = collections.Counter(outcome for outcome, _ in results.values())
    regressions, stale, unknown = [], [], []
    for tid, (actual, message) in sorted(results.items()):
        prefix, entry = entry_for(entries, tid)
        if entry is None:
            unknown.append(f"{tid}: {actual} ({message})")
            continue
        expected = entry[0]
        if expected in ("ignore", "exclude") or expected == actual:
            continue
        if expected == "pass":
            regressions.append(f"{tid}: expected to pass, {actual}: {message}")
        elif actual == "fail":
            regressions.append(f"{tid}: listed as `{expected}` but fails: {message}")
        else:
            stale.append(f"{tid}: listed as `{expected}` ({entry[1]}) but {actual}")
    total = sum(counts.values())
    print(
        f"{suite} suite: {total} tests: {counts['pass']} passed, {counts['fail']} failed, "
        f"{counts['skip']} skipped; {sum(1 for o, _ in entries.values() if o == 'exclude')} "
        "entries excluded from the run"
    )
    by_reason = collections.Counter(
        message for outcome, message in results.values() if outcome == "skip"
    )
    print(f"skips by reason ({suite}'s own messages):")
    for reason, n in by_reason.most_common():
        print(f"  {n:5}  {reason}")
    for title, items in (
        ("expected to pass (or to be skipped), failed", regressions),
        ("listed as failing or skipped, now better (update the file with `write`)", stale),
        ("tests no entry covers", unknown),
    ):
        if items:
            print(f"{title}: {len(items)}")
            for item in items[:200]:
                print(f"  {item}")
    return 1 if regressions or unknown else 0


def write(expected_path, reports):
    """Groups the results by file, then class: one entry where all share outcome and reason."""
    try:
        old = read_expected(expected_path)
    except FileNotFoundError:
        old = {}
    results = read_reports(reports)
    header = []
    try:
        with open(expected_path, encoding="utf-8") as f:
            for line in f:
                if not line.startswith("#"):
                    break
                header.append(line)
    except FileNotFoundError:
        pass
    keep = {tid: e for tid, e in old.items() if e[0] in ("exclude", "ignore")}

    def reason_for(tid, outcome, message):
        before = old.get(tid)
        if before and before[0] == outcome and before[1]:
            return before[1]
        return message

    def same(tids):
        seen = {(results[t][0], results[t][0] != "pass" and results[t][1]) for t in tids}
        return len(seen) == 1

    lines = []

    def emit(tid, tids):
        outcome, message = results[tids[0]]
        if entry_for(keep, tid)[1] is not None:
            return
        reason = reason_for(tid, outcome, message) if outcome != "pass" else ""
        lines.append(f"{outcome} {tid}" + (f"  # {reason}" if reason else ""))

    by_file = collections.defaultdict(list)
    for tid in sorted(results):
        by_file[tid.split("::")[0]].append(tid)
    for file, tids in sorted(by_file.items()):
        if same(tids):
            emit(file, tids)
            continue
        by_class = collections.defaultdict(list)
        for tid in tids:
            parts = tid.split("::")
            by_class["::".join(parts[:2]) if len(parts) > 2 else tid].append(tid)
        for cls, members in sorted(by_class.items()):
            if len(members) > 1 and same(members):
                emit(cls, members)
            else:
                for tid in members:
                    emit(tid, [tid])
    for tid, (outcome, reason) in sorted(keep.items()):
        lines.append(f"{outcome} {tid}  # {reason}")
    with open(expected_path, "w", encoding="utf-8") as f:
        f.writelines(header)
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} entries to {expected_path}")
    return 0


def main():
    args, suite = sys.argv[1:], "pymongo"
    if len(args) >= 2 and args[0] == "--suite":
        suite, args = args[1], args[2:]
    if len(args) < 3 or args[0] not in ("check", "write"):
        sys.exit(__doc__)
    command, expected, reports = args[0], args[1], args[2:]
    sys.exit(check(expected, reports, suite) if command == "check" else write(expected, reports))


if __name__ == "__main__":
    main()
