#!/usr/bin/env python3
"""Checks of docs/run-on-your-cluster.md that need no cluster (ctest tj_cluster_doc_lint_test).

1. Every ```sh block is marked for tests/e2e/cluster_doc.sh (tests/e2e/doc_steps.py).
2. One name per image: the chart's image (values.yaml image.repository + Chart.yaml appVersion)
   and the examples' runtime image are the names the page's table gives, its TJ_VERSION is the
   appVersion, and no image reference
   in the chart, the examples, docker/, the docs or the e2e names another registry or path.
3. The troubleshooting table names only condition types and reasons the operator sets: each is a
   string literal of api/, jobcontrol/ or operator/.

  cluster_doc_lint.py REPO      exit 1 naming file:line of each problem
"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_steps  # noqa: E402

PREFIX = "ghcr.io/trainingjob-dev/"
PAGE = "docs/run-on-your-cluster.md"
# An image reference of the project: <registry/path>/<image>:<tag>.
IMAGE_REF = re.compile(r"([\w.${}-]+(?:/[\w.${}-]+)*)/(tj-operator|tj-runtime|tf-pss|tj-no-such-image):")


def read(repo, rel):
    with open(os.path.join(repo, rel), encoding="utf-8") as f:
        return f.read()


def check_steps(repo, problems):
    try:
        doc_steps.parse_steps(os.path.join(repo, PAGE))
    except doc_steps.PageError as e:
        problems.append(str(e))


def image_files(repo):
    patterns = ["examples/**/*.yaml", "helm/**/*.yaml", "helm/**/*.txt", "helm/README.md",
                "docker/*", "docs/*.md", "README.md", "tests/e2e/*.sh", "tests/docker/CMakeLists.txt"]
    files = set()
    for pattern in patterns:
        files.update(glob.glob(os.path.join(repo, pattern), recursive=True))
    # decisions.md is history: it may name what was.
    return sorted(f for f in files if not f.endswith("docs/decisions.md") and os.path.isfile(f))


def check_images(repo, problems):
    chart = read(repo, "helm/trainingjob-operator/Chart.yaml")
    values = read(repo, "helm/trainingjob-operator/values.yaml")
    version = re.search(r'^appVersion:\s*"?([^"\s]+)"?', chart, re.M)
    repository = re.search(r"^image:\n(?:\s+#.*\n|\s+\w+:.*\n)*?\s+repository:\s*(\S+)", values, re.M)
    if not version or not repository:
        problems.append("helm/trainingjob-operator: cannot read appVersion or image.repository")
        return
    operator = f"{repository.group(1)}:{version.group(1)}"
    runtime = f"{PREFIX}tj-runtime:{version.group(1)}"
    page = read(repo, PAGE)
    for name in (operator, runtime):
        if f"`{name}`" not in page:
            problems.append(f"{PAGE}: the table of images does not name {name}")
    # The tag the page pushes is the one the chart and the examples pull.
    exported = re.search(r"^export TJ_VERSION=(\S+)", page, re.M)
    if not exported or exported.group(1) != version.group(1):
        problems.append(f"{PAGE}: `export TJ_VERSION=` is not the chart's appVersion {version.group(1)}")
    if not operator.startswith(PREFIX):
        problems.append(f"helm/trainingjob-operator/values.yaml: image.repository {repository.group(1)} "
                        f"is not under {PREFIX}")
    for path in sorted(glob.glob(os.path.join(repo, "examples", "*.yaml"))):
        for n, line in enumerate(read(repo, path).split("\n"), 1):
            m = re.match(r"\s*image:\s*(\S+)", line)
            if m and m.group(1) != runtime:
                problems.append(f"{os.path.relpath(path, repo)}:{n}: image {m.group(1)}, not {runtime}")
    for path in image_files(repo):
        rel = os.path.relpath(path, repo)
        try:
            text = read(repo, rel)
        except UnicodeDecodeError:
            continue
        for n, line in enumerate(text.split("\n"), 1):
            for m in IMAGE_REF.finditer(line):
                where = m.group(1)
                if where.startswith("$") or where + "/" == PREFIX:
                    continue
                problems.append(f"{rel}:{n}: image {m.group(0)}... is not under {PREFIX}")


def literals(repo):
    out = set()
    for d in ("api", "jobcontrol", "operator"):
        for path in glob.glob(os.path.join(repo, d, "**", "*.cc"), recursive=True) + \
                glob.glob(os.path.join(repo, d, "**", "*.h"), recursive=True):
            with open(path, encoding="utf-8") as f:
                out.update(re.findall(r'"([A-Z][A-Za-z]+)"', f.read()))
    return out


def check_reasons(repo, problems):
    lines = read(repo, PAGE).split("\n")
    known = literals(repo)
    in_section = False
    rows = 0
    for n, line in enumerate(lines, 1):
        if line.startswith("## "):
            in_section = "When it does not start" in line
            continue
        if not in_section or not line.startswith("| `"):
            continue
        rows += 1
        first = line.split("|")[1]
        for name in re.findall(r"`([A-Za-z]+)`", first):
            if name not in known:
                problems.append(f"{PAGE}:{n}: `{name}` is no condition type or reason the operator "
                                "sets (no such string literal in api/, jobcontrol/, operator/)")
    if rows < 10:
        problems.append(f"{PAGE}: the table of \"When it does not start\" has {rows} rows, fewer than 10")


def main():
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[-1].strip(), file=sys.stderr)
        return 2
    repo = sys.argv[1]
    problems = []
    check_steps(repo, problems)
    check_images(repo, problems)
    check_reasons(repo, problems)
    for p in problems:
        print(f"cluster_doc_lint: {p}", file=sys.stderr)
    if not problems:
        print("cluster_doc_lint: steps marked, one name per image, every reason the operator's")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
