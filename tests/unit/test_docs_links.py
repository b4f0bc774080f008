"""Links between the docs hold: every relative link and anchor in README.md, CONTRIBUTING.md,
docs/*.md and hadoop-docker/*.md names a file that exists, and an anchor names a heading of its
target as GitHub renders it (its slug, with -1, -2 ... on repeated headings). A renamed section
breaks this test, not the reader. External http(s) links are not fetched (the tests have no
network); they are only listed (printed) and checked to be well formed.

The docs also point at sections in prose, `docs/daemon.md "High availability"` or
`docs/benchmark.md 6.14`: such a quoted name must begin a heading (or a bold lead-in) of that
doc, and such a number must number one of its headings.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from functools import lru_cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[2]


def doc_files() -> list[Path]:
    """The docs whose links are checked."""
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
    files += sorted((ROOT / "docs").glob("*.md")) + sorted((ROOT / "hadoop-docker").glob("*.md"))
    return [f for f in files if f.exists()]


FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
# [text](target "title") and ![alt](target); text may hold one level of brackets (an image)
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
                         r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REF_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_HREF = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']+)[\"']", re.I)
HTML_ID = re.compile(r"<[a-z][^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
ATX = re.compile(r"^\s{0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$")
SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")


def prose_lines(text: str):
    """(line number, line) of the lines outside fenced code blocks, and whether each is in one."""
    fence = None
    for no, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * len(m.group(1))
            yield no, line, True
            continue
        if fence is not None:
            if line.strip().startswith(fence) and set(line.strip()) <= {fence[0]}:
                fence = None
            yield no, line, True
            continue
        yield no, line, False


def heading_text(raw: str) -> str:
    """A heading's text as GitHub renders it: inline code's content, a link's text, no
    emphasis markers or HTML tags."""
    text = re.sub(r"`+([^`]*)`+", r"\1", raw)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"(\*\*|__|\*|~~)", "", text)
    return text.strip()


def slugify(text: str) -> str:
    """GitHub's anchor for a heading (github-slugger): lower case, every character that is not
    a letter, a digit, a mark, '_', '-' or a space removed, each space a '-'."""
    kept = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in "-_" or ch == " " or cat[0] in "LNM":
            kept.append("-" if ch == " " else ch)
    return "".join(kept)


def anchors_of_text(text: str) -> set[str]:
    """Every anchor a Markdown file offers: its headings' slugs (repeats suffixed -1, -2, ...)
    and the ids and names of its HTML elements."""
    seen: dict[str, int] = {}
    anchors: set[str] = set()

    def add(heading: str) -> None:
        slug = slugify(heading_text(heading))
        if slug in seen:
            seen[slug] += 1
            while f"{slug}-{seen[slug]}" in seen:
                seen[slug] += 1
            unique = f"{slug}-{seen[slug]}"
            seen[unique] = 0
        else:
            seen[slug] = 0
            unique = slug
        anchors.add(unique)

    previous = None
    for _, line, in_code in prose_lines(text):
        if in_code:
            previous = None
            continue
        m = ATX.match(line)
        if m:
            add(m.group(2) or "")
            previous = None
            continue
        if previous and previous.strip() and SETEXT.match(line) and not ATX.match(previous) \
                and not previous.lstrip().startswith(("|", "-", "*", ">")):
            add(previous.strip())
            previous = None
            continue
        anchors.update(HTML_ID.findall(line))
        previous = line
    return anchors


@lru_cache(maxsize=None)
def anchors_of(path: Path) -> frozenset[str]:
    return frozenset(anchors_of_text(path.read_text()))


def links_of_text(text: str) -> list[tuple[int, str]]:
    """(line, target) of every link and image outside code: inline, reference definitions and
    HTML href/src."""
    found = []
    for no, line, in_code in prose_lines(text):
        if in_code:
            continue
        m = REF_DEF.match(line)
        if m:
            found.append((no, m.group(1).strip("<>")))
            continue
        prose = INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line)
        found += [(no, t.strip("<>")) for t in INLINE_LINK.findall(prose)]
        found += [(no, t) for t in HTML_HREF.findall(prose)]
    return found


def is_external(target: str) -> bool:
    return bool(re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I))


def check_link(doc: Path, target: str) -> str | None:
    """Why a relative link of ``doc`` is broken (None: it is not)."""
    if not target:
        return "empty link"
    path_part, _, anchor = target.partition("#")
    dest = doc if not path_part else (doc.parent / unquote(path_part)).resolve()
    if not path_part and not anchor:
        return "empty link"
    try:
        dest.relative_to(ROOT)
    except ValueError:
        return f"{path_part} leaves the repository"
    if not dest.exists():
        return f"{path_part}: no such file"
    if anchor and dest.is_file() and dest.suffix.lower() == ".md":
        if unquote(anchor).lower() not in anchors_of(dest):
            return f"#{anchor}: no such heading in {dest.relative_to(ROOT)}"
    elif anchor and dest.is_file() and not re.fullmatch(r"L\d+(-L\d+)?", anchor):
        return f"#{anchor}: an anchor into {dest.relative_to(ROOT)}, which is not Markdown"
    return None


PROSE_REF = re.compile(r"((?:[\w.-]+/)*[\w-]+\.md)[,:]?\s+\(?[\"\u201c]([^\"\u201d\n]{2,100}?)[\"\u201d]")
NUMBER_REF = re.compile(r"((?:[\w.-]+/)*[\w-]+\.md),?\s+(?:sections?\s+)?(\d+(?:\.\d+)?)\b(?![.\d]*\s*(?:%|s\b|MB|GB))")
BOLD_LEAD = re.compile(r"^\s*(?:[-*+]\s+|\d+\.\s+)?\*\*(.+?)\*\*")


def prose_of(text: str) -> str:
    """The text outside fenced code, inline code kept, lines joined by spaces (a reference may
    wrap)."""
    return " ".join(line.strip() for _, line, in_code in prose_lines(text) if not in_code)


def resolve_doc(doc: Path, name: str) -> Path | None:
    """The doc a prose reference names: relative to the referring doc, else to the root."""
    for base in (doc.parent, ROOT):
        candidate = (base / name).resolve()
        if candidate.is_file():
            return candidate
    return None


def normalize(text: str) -> str:
    return re.sub(r"\s+", " ", heading_text(text).replace("\u2019", "'")).strip().lower()


@lru_cache(maxsize=None)
def section_names(path: Path) -> tuple[str, ...]:
    """The headings' texts of a doc, and its bold lead-ins (a paragraph or list item that
    starts with **...**), normalized."""
    names = []
    for _, line, in_code in prose_lines(path.read_text()):
        if in_code:
            continue
        m = ATX.match(line)
        if m:
            names.append(normalize(m.group(2) or ""))
            continue
        b = BOLD_LEAD.match(line)
        if b:
            names.append(normalize(b.group(1)))
    return tuple(names)


def check_prose_ref(doc: Path, name: str, section: str) -> str | None:
    """Why a prose reference ``name "section"`` or ``name 6.14`` is broken (None: it is not)."""
    target = resolve_doc(doc, name)
    numbered = re.fullmatch(r"\d+(\.\d+)?", section) is not None
    if target is None:
        # docs/ is the repository's; another path (the design notes beside the repository,
        # a results file) is not a doc this test can read, and a number after it is no section
        return f"{name}: no such file" if name.startswith("docs/") and not numbered else None
    names = section_names(target)
    if numbered:
        if not any(re.match(r"\d+\.", n) for n in names):
            return None  # not a doc with numbered sections: the number is something else
        prefix = section + ("." if "." not in section else "")
        if not any(n.startswith(prefix + " ") or n.startswith(prefix) and "." not in section
                   for n in names):
            return f"no section numbered {section} in {target.relative_to(ROOT)}"
        return None
    wanted = normalize(section)
    if not any(n.startswith(wanted) for n in names):
        return f'no heading or bold lead-in starting "{section}" in {target.relative_to(ROOT)}'
    return None


def prose_refs(text: str) -> list[tuple[str, str]]:
    prose = prose_of(text)
    refs = [(m.group(1), m.group(2)) for m in PROSE_REF.finditer(prose)]
    refs += [(m.group(1), m.group(2)) for m in NUMBER_REF.finditer(prose)]
    return refs


def all_links() -> list[tuple[Path, int, str]]:
    return [(doc, no, target) for doc in doc_files() for no, target in links_of_text(doc.read_text())]


# ---- the helpers themselves ----

@pytest.mark.parametrize("heading, slug", [
    ("The sidecar daemon: `dsbra run`", "the-sidecar-daemon-dsbra-run"),
    ("6.14 `adaptive-hold` beside the default and static (issue 43)",
     "614-adaptive-hold-beside-the-default-and-static-issue-43"),
    ("Watching it: Grafana and Prometheus alerts", "watching-it-grafana-and-prometheus-alerts"),
    ("Measured (benchmarks/bench_cluster.py; history in x.jsonl)",
     "measured-benchmarksbench_clusterpy-history-in-xjsonl"),
    ("`--advise`: the settings that cost node locality", "--advise-the-settings-that-cost-node-locality"),
    ("What it has shown", "what-it-has-shown"),
    ("A **bold** [link](x.md) heading", "a-bold-link-heading"),
])
def test_slugify_as_github_does(heading, slug):
    assert slugify(heading_text(heading)) == slug


def test_repeated_headings_get_numbered_anchors():
    text = "# Tests\n\n## Tests\n\n```\n# Tests\n```\n\n### Tests\n\nA\n-\n"
    assert anchors_of_text(text) == {"tests", "tests-1", "tests-2", "a"}


def test_links_outside_code_are_found():
    text = ("see [a](docs/a.md#x) and ![i](img.png \"t\") and `[no](code.md)`\n"
            "```\n[no](fenced.md)\n```\n[ref]: docs/b.md\n<a href=\"c.md\">c</a>\n"
            "[paren](docs/x_(y).md)\n")
    assert [t for _, t in links_of_text(text)] == ["docs/a.md#x", "img.png", "docs/b.md", "c.md",
                                                   "docs/x_(y).md"]


def test_a_broken_link_or_anchor_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\n## Section two\n")
    doc = tmp_path / "README.md"
    assert check_link(doc, "docs/a.md#section-two") is None
    assert check_link(doc, "docs/a.md#a") is None
    assert "no such heading" in check_link(doc, "docs/a.md#section-2")
    assert "no such file" in check_link(doc, "docs/b.md")
    assert "leaves the repository" in check_link(doc, "../elsewhere.md")


# ---- the repository's docs ----

def test_the_docs_are_found():
    names = {d.relative_to(ROOT).as_posix() for d in doc_files()}
    assert {"README.md", "CONTRIBUTING.md", "docs/daemon.md", "docs/results.md"} <= names


@pytest.mark.parametrize("doc", doc_files(), ids=lambda d: d.relative_to(ROOT).as_posix())
def test_relative_links_and_anchors_resolve(doc):
    broken = []
    for no, target in links_of_text(doc.read_text()):
        if is_external(target):
            continue
        why = check_link(doc, target)
        if why:
            broken.append(f"{doc.relative_to(ROOT)}:{no}: ({target}) {why}")
    assert not broken, "broken links:\n" + "\n".join(broken)


@pytest.mark.parametrize("doc", doc_files(), ids=lambda d: d.relative_to(ROOT).as_posix())
def test_sections_named_in_prose_exist(doc):
    broken = []
    for name, section in prose_refs(doc.read_text()):
        why = check_prose_ref(doc, name, section)
        if why:
            broken.append(f'{doc.relative_to(ROOT)}: {name} "{section}": {why}')
    assert not broken, "references to sections that do not exist:\n" + "\n".join(broken)


def test_prose_references_are_found_and_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    section_names.cache_clear()
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text("# B\n\n## 6. Arms\n\n### 6.14 `hold` beside static\n\n"
                                            "## High availability: two NameNodes\n\n"
                                            "- **The queue adjustment: put back** (x)\n")
    text = ('see docs/b.md "High availability", docs/b.md, "The queue\nadjustment" and\n'
            "docs/b.md 6.14, docs/b.md section 6, docs/b.md 6.2 and docs/b.md \"Nothing\"; "
            "docs/b.md 5 s is a duration; design/c.md \"Elsewhere\" and docs/c.md \"Gone\"")
    refs = prose_refs(text)
    assert sorted(refs) == sorted([("docs/b.md", "High availability"), ("docs/b.md", "The queue adjustment"),
                                   ("docs/b.md", "Nothing"), ("docs/b.md", "6.14"), ("docs/b.md", "6"),
                                   ("docs/b.md", "6.2"), ("design/c.md", "Elsewhere"),
                                   ("docs/c.md", "Gone")])
    doc = tmp_path / "README.md"
    assert [s for n, s in refs if check_prose_ref(doc, n, s)] == ["Nothing", "Gone", "6.2"]
    section_names.cache_clear()


def test_external_links_are_listed_and_well_formed(capsys):
    external = sorted({t for _, _, t in all_links() if is_external(t)})
    with capsys.disabled():
        print(f"\n{len(external)} external links (not fetched):")
        for url in external:
            print(f"  {url}")
    bad = [u for u in external if urlsplit(u).scheme in ("http", "https") and not urlsplit(u).netloc]
    assert not bad, bad


@pytest.mark.parametrize("doc", [d for d in doc_files() if d.name != "README.md" or d.parent != ROOT],
                         ids=lambda d: d.relative_to(ROOT).as_posix())
def test_every_doc_opens_with_its_title_and_what_it_is_for(doc):
    """A reader landing on a doc learns first what it is for and what it says: its title, then
    a paragraph that starts "What this page is for:" and sums the page up. (The README is the
    landing page: it has its own shape.)"""
    paragraphs = [p.strip() for p in doc.read_text().split("\n\n") if p.strip()]
    assert paragraphs[0].startswith("# ") and "\n" not in paragraphs[0], "the first line is the title"
    assert paragraphs[1].startswith("What this page is for:"), paragraphs[1][:80]
