"""How pytest-xdist hands out the suite: test by test, shared fixtures kept whole.

``--dist loadgroup`` would keep an ``xdist_group`` on one worker, but it marks the group
in the test's node id, which pytest 9.2 no longer lets a plugin change
(pytest-dev/pytest-xdist#1386): the groups are silently lost. So the workers write down
what they collected instead (:func:`record`): for each test, the group it must run in
(the tests of a module that share a module- or session-scoped fixture of the module's
own, or an explicit ``xdist_group``), and sort them heaviest unit first (``slow`` and
``distributed`` tests weigh more). The controller's scheduler (:func:`scheduler`) hands
out each group whole and every other test alone, in that order.

A run without pytest-xdist (``-n 0``, ``-p no:xdist``) does none of this.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

#: Where the workers' plans go: an attribute of the controller's ``config.option``, and
#: a key of each worker's ``config.workerinput``.
OPTION = "fsdp_compat_xdist_plan"


def start(config: pytest.Config) -> None:
    """On the controller of a parallel ``--dist loadgroup`` run: a folder for the plans."""
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("xdist"):
        return
    if config.getoption("numprocesses", None) and config.getoption("dist") == "loadgroup":
        setattr(config.option, OPTION, tempfile.mkdtemp(prefix="pytest-xdist-plan-"))


def tell(node: Any) -> None:
    """On the controller, as a worker starts: where it writes its plan."""
    folder = getattr(node.config.option, OPTION, None)
    if folder:
        node.workerinput[OPTION] = folder


def finish(config: pytest.Config) -> None:
    folder = getattr(config.option, OPTION, None)
    if folder and not hasattr(config, "workerinput"):
        shutil.rmtree(folder, ignore_errors=True)


def group_of(item: pytest.Item) -> str | None:
    """The group ``item`` must run in, or None where it may run anywhere."""
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    info = getattr(item, "_fixtureinfo", None)
    module = item.nodeid.split("::")[0]
    for definitions in info.name2fixturedefs.values() if info else ():
        for definition in definitions:
            if definition.scope != "function" and definition.baseid.split("::")[0] == module:
                return module
    return None


#: How much more a ``slow`` or ``distributed`` test weighs than another.
HEAVY = 20


def record(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a worker, after collection: each test's group, for the controller.

    The tests are also put in order, heaviest unit (group or lone test) first: the
    controller hands the units out in that order, so the long ones start at once and
    the last minutes are not one worker's long test while the other idles. Every
    worker sorts the same collection the same way, as xdist requires.
    """
    folder = getattr(config, "workerinput", {}).get(OPTION)
    if not folder:
        return
    units = [group_of(item) or item.nodeid for item in items]
    weight: dict[str, int] = {}
    first: dict[str, int] = {}
    for index, (item, unit) in enumerate(zip(items, units)):
        heavy = item.get_closest_marker("slow") or item.get_closest_marker("distributed")
        weight[unit] = weight.get(unit, 0) + (HEAVY if heavy else 1)
        first.setdefault(unit, index)
    order = sorted(range(len(items)), key=lambda i: (-weight[units[i]], first[units[i]], i))
    items[:] = [items[i] for i in order]
    plan = {}
    for item in items:
        plan[item.nodeid] = [group_of(item)]
    path = Path(folder) / f"{config.workerinput['workerid']}.json"
    partial = path.with_suffix(".part")
    partial.write_text(json.dumps(plan), encoding="utf-8")
    os.replace(partial, path)


def scheduler(config: pytest.Config, log: Any) -> Any:
    """The controller's scheduler for a run :func:`start` prepared, or None (xdist's own)."""
    if getattr(config.option, OPTION, None) is None:
        return None
    from xdist.scheduler import LoadScopeScheduling

    folder = Path(getattr(config.option, OPTION))
    plan: dict[str, list] = {}
    config.option.loadscopereorder = False  # keep the collection's (weighted) order

    class PlannedScheduling(LoadScopeScheduling):
        """xdist's scope scheduling, each test its own scope except the plan's groups.

        The units go out in the order the workers collected them (:func:`record`
        sorted them by weight), not by xdist's count of tests per scope.
        """

        def _split_scope(self, nodeid: str) -> str:
            if not plan:
                # Every worker collected the same tests (xdist checks): any plan serves.
                found = sorted(folder.glob("*.json"))
                plan.update(json.loads(found[0].read_text(encoding="utf-8")) if found else {})
            group = plan.get(nodeid, [None])[0]
            return f"group:{group}" if group else nodeid

        # xdist's own bookkeeping is quadratic with one scope per test: every finished
        # test sums the pending tests of every scope the worker ever had, and every unit
        # sent looks its tests up with ``list.index``. Over the suite's 10,000 tests that
        # was most of the controller's 15 s of CPU, taken from the workers' two cores.

        def mark_test_complete(self, node: Any, item_index: int, duration: float = 0) -> None:
            nodeid = self.registered_collections[node][item_index]
            scope = self._split_scope(nodeid)
            work = self.assigned_work[node]
            work[scope][nodeid] = True
            left[node, scope] -= 1
            if not left[node, scope]:  # done: it counts for nothing in ``_pending_of``
                del work[scope], left[node, scope]
            self._reschedule(node)

        def _assign_work_unit(self, node: Any) -> None:
            scope, work_unit = self.workqueue.popitem(last=False)
            self.assigned_work.setdefault(node, {})[scope] = work_unit
            positions = indexes.get(node)
            if positions is None:
                collection = self.registered_collections[node]
                positions = indexes[node] = {nodeid: i for i, nodeid in enumerate(collection)}
            pending = [positions[nodeid] for nodeid, done in work_unit.items() if not done]
            left[node, scope] = len(pending)
            node.send_runtest_some(pending)

    indexes: dict[Any, dict[str, int]] = {}  # per worker: node id -> its index there
    left: dict[tuple[Any, str], int] = {}  # per worker and scope: tests not yet reported

    return PlannedScheduling(config, log)
