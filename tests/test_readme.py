"""The README is a short guide that cannot drift: at most 300 lines, every file it and docs/
link exists, its Quickstart is one bash block (CI runs it: scripts/readme_quickstart.py), and
every ``classify`` command and ``make`` target it names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scripts.readme_quickstart import quickstart_lines

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
MAX_LINES = 300


def links(markdown: str) -> list[str]:
    """Relative link and image targets of a markdown text, without their #anchors.

    Example:
        >>> links("[a](docs/x.md#top) ![b](y.png) [c](https://example.org)")
        ['docs/x.md', 'y.png']
    """
    targets = re.findall(r"\]\(([^)\s]+)\)", markdown)
    return [t.split("#")[0] for t in targets if not re.match(r"[a-z]+:", t) and t.split("#")[0]]


def missing_links(path: Path) -> list[str]:
    return [t for t in links(path.read_text()) if not (path.parent / t).exists()]


def cli_commands() -> set[str]:
    """The commands of ``classify``, as its click group registers them."""
    from classifier.cli.main import cli

    return set(cli.commands)


def make_targets() -> set[str]:
    return set(re.findall(r"^([a-z0-9-]+):", (ROOT / "Makefile").read_text(), re.M))


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= MAX_LINES


@pytest.mark.parametrize("path", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=str)
def test_every_linked_file_exists(path):
    assert missing_links(path) == []


def test_a_missing_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[there](page.md) [gone](gone.md#x) [web](https://example.org/a.md)")
    assert missing_links(page) == ["gone.md"]


def test_the_quickstart_is_one_bash_block_of_real_commands():
    lines = quickstart_lines(README.read_text())
    assert any(line.startswith("classify train") for line in lines)
    assert any(line.startswith("classify predict") for line in lines)
    assert "make ui" in lines
    for wrong in (
        "## Set-up\n```bash\nmake train\n```\n",  # no Quickstart
        "## Quickstart\ntext\n## Commands\n```bash\nmake train\n```\n",  # a later section's
        "## Quickstart\n```bash\nmake ui\n```\n```bash\nmake train\n```\n",  # two blocks
    ):
        with pytest.raises(ValueError, match="no ```bash block"):
            quickstart_lines(wrong)


def test_every_command_and_target_named_exists():
    text = README.read_text()
    commands = cli_commands()
    assert {"train", "predict", "compare", "sweep"} <= commands  # the parser finds them
    # As code: in backticks, or at the start of a line of a code block.
    named = set(re.findall(r"(?:^|`)classify ([a-z][a-z-]*)", text, re.M))
    assert named - commands == set()
    targets = set(re.findall(r"(?:^|`)make ([a-z][a-z0-9-]*)", text, re.M))
    assert targets - make_targets() == set()


def docs_pages() -> list[Path]:
    return [README, *sorted((ROOT / "docs").glob("*.md"))]


def test_dry_run_counts_in_the_docs_are_the_specs_point_counts():
    from classifier.sweeps.spec import expand, load_spec

    claims = [
        (page, spec, int(count))
        for page in docs_pages()
        for spec, count in re.findall(
            r"classify sweep (\S+\.yaml) --dry-run\s+# list the (\d+) points", page.read_text()
        )
    ]
    assert claims, "no dry-run example found"
    for page, spec, count in claims:
        assert len(expand(load_spec(ROOT / spec))) == count, (page.name, spec)


def test_the_compare_example_has_the_columns_compare_prints():
    from classifier.sweeps.compare import ComparisonRow
    from classifier.sweeps.table import format_comparison

    row = ComparisonRow("encoder", [1, 2], "d=16", 0.88, 0.871, 0.002, 7.0, 370.0, 171_000)
    header = format_comparison([row]).splitlines()[0].split()
    text = (ROOT / "docs" / "tracking.md").read_text()
    example = text.split("### `classify compare`", 1)[1].split("```text\n", 1)[1].split("```")[0]
    assert example.splitlines()[0].split() == header
