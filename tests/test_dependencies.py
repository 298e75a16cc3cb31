"""Dependencies are ranges with a floor and a ceiling, and the lock is a set they allow."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
SELF = canonicalize_name(PROJECT["name"])


def requirements() -> list[Requirement]:
    listed = [*PROJECT["dependencies"]]
    for extra in PROJECT["optional-dependencies"].values():
        listed.extend(extra)
    found = [Requirement(text) for text in listed]
    return [r for r in found if canonicalize_name(r.name) != SELF]


def locked() -> dict[str, Version]:
    text = (ROOT / "constraints.txt").read_text()
    pins = re.findall(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", text, re.MULTILINE)
    return {canonicalize_name(name): Version(version) for name, version in pins}


def test_every_requirement_has_a_floor_and_a_ceiling() -> None:
    for requirement in requirements():
        operators = {spec.operator for spec in requirement.specifier}
        assert ">=" in operators and "<" in operators, str(requirement)


def test_the_lock_holds_every_requirement_inside_its_range() -> None:
    pins = locked()
    for requirement in requirements():
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in constraints.txt: run `bash .ci/lock`"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt has {name}=={pins[name]}, outside {requirement}: run `bash .ci/lock`"
        )
