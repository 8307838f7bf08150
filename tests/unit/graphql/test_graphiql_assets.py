"""The GraphiQL files shipped in the package: each third-party one with its licence and source."""

from __future__ import annotations

from pathlib import Path

import fortemi.graphql.ide as ide

STATIC = Path(ide.__file__).parent / "static" / "graphiql"
OURS = {"fortemi-graphiql.js", "fortemi-graphiql.css"}


def test_every_third_party_file_is_listed_with_version_licence_and_source() -> None:
    listing = (STATIC / "README.md").read_text(encoding="utf-8")
    shipped = {p.name for p in STATIC.iterdir() if p.suffix in (".js", ".css")} - OURS
    assert shipped == {
        "graphiql.min.js",
        "graphiql.min.css",
        "react.production.min.js",
        "react-dom.production.min.js",
    }
    for name in shipped:
        assert f"`{name}`" in listing, name
    for package, version in (("graphiql", "3.8.3"), ("react", "18.3.1"), ("react-dom", "18.3.1")):
        assert f"https://registry.npmjs.org/{package}/-/{package}-{version}.tgz" in listing
    for licence in ("LICENSE.graphiql", "LICENSE.react"):
        text = (STATIC / licence).read_text(encoding="utf-8")
        assert text.startswith("MIT License"), licence
        assert f"`{licence}`" in listing


def test_the_page_loads_every_shipped_script_and_style() -> None:
    page = ide.GraphiQLPage()
    html = bytes(page.render("/graphql").body).decode()
    for path in STATIC.iterdir():
        if path.suffix in (".js", ".css"):
            assert page.url(path.name) in html, path.name
