"""Fill the report's RunData from the recorder's store, and regenerate a report from a run folder.

The plan stored with the experiment supplies the reagents and conditions; the records supply the data.
Used by the summarizer node and by `agentchemist report <run_dir>`.
"""
from __future__ import annotations

import hashlib
from pathlib import Path

import agentchemist
from agentchemist.record import RecordConfigError, StoreDamagedError, open_store
from agentchemist.record.store import sqlite_file
from agentchemist.report.model import RunData
from agentchemist.report.writer import write_report

STORE_NAME = "records.db"


def config_hash(config_dir: Path | None = None) -> str:
    """sha256 over every file in config/: the reproducibility guide names the exact configuration."""
    from agentchemist.paths import config_dir as default_dir
    root = Path(config_dir or default_dir())
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _reagents_and_conditions(plan: dict) -> tuple[list[dict], dict]:
    parsed = plan.get("parsed_instruction", {}) if isinstance(plan, dict) else {}
    reagents = []
    for r in (parsed.get("entities", {}) or {}).get("reagents", []) or []:
        reagents.append({k: r.get(k) for k in ("name", "role", "concentration_m", "volume_ml", "mass_g")
                         if r.get(k) is not None})
        if r.get("unknown"):
            reagents[-1]["unknown"] = True  # the concentration is the run's result, the number an estimate
    conditions = {}
    for key in ("initial_conditions", "target_conditions"):
        value = parsed.get(key) or {}
        if isinstance(value, dict):
            conditions.update({k: v for k, v in value.items() if v is not None})
    return reagents, conditions


def run_data(store, experiment_id: str, run_dir: Path | None = None) -> RunData:
    raw = store.load_run(experiment_id)
    experiment = dict(raw["experiment"])
    metadata = experiment.pop("metadata", None) or {}
    plan = experiment.get("plan") or metadata.get("plan") or {}
    reagents, conditions = _reagents_and_conditions(plan)
    for key in ("calendar_start", "calendar_finish"):  # ISO 8601 wall-clock times the recorder stored
        if isinstance(metadata.get(key), str):
            experiment[key] = metadata[key]
    experiment.update({"plan": plan, "reagents": experiment.get("reagents") or reagents,
                       "conditions": {**conditions, **(experiment.get("conditions") or {})},
                       "software_version": f"agentchemist {agentchemist.__version__}",
                       "config_hash": config_hash()})
    experiment.setdefault("instruction", (plan.get("parsed_instruction") or {}).get("raw_instruction", ""))
    return RunData(experiment=experiment, transitions=raw["transitions"], raw_observations=raw["raw_observations"],
                   fused_records=raw["fused_records"], anomalies=raw["anomalies"],
                   audio_events=raw["audio_events"], artifacts=raw["artifacts"], run_dir=run_dir)


class ReportSourceError(ValueError):
    """The run to report on cannot be read: no such folder or database, or a damaged one."""


def symlinks_in(run_dir: Path) -> list[str]:
    """The symbolic links in a run folder and below (none followed): the report writes report.*, tables/ and
    charts there, and a link planted in their place would have it overwrite a file outside the run."""
    import os

    links = [str(run_dir)] if run_dir.is_symlink() else []
    for top, dirs, files in os.walk(run_dir, followlinks=False):
        links += [os.path.join(top, n) for n in (*dirs, *files) if os.path.islink(os.path.join(top, n))]
    return links


def _sqlite_header_ok(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(16) == b"SQLite format 3\x00"


def regenerate_report(run_dir: str | Path, store_url: str | None = None, experiment_id: str | None = None):
    """Write the report of a stored run into run_dir; returns the writer's ReportPaths.

    Never creates a folder or a database: a mistyped path or a missing records.db is a
    :class:`ReportSourceError` (a ValueError), and so is a damaged database.
    """
    import sqlite3

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ReportSourceError(f"{run_dir}: no such run folder (a run folder holds {STORE_NAME}; runs are under runs/)")
    if store_url is None:
        db = run_dir / STORE_NAME
        if not db.is_file():
            raise ReportSourceError(f"{run_dir}: no {STORE_NAME} in this folder, so there is no run to report on")
        if not _sqlite_header_ok(db):
            raise ReportSourceError(f"{db}: not a readable SQLite database (damaged or truncated file)")
        store_url = str(db)
    else:  # a path or sqlite:/// URL names an existing file: reporting creates no folder and no database
        try:
            db = sqlite_file(store_url)
        except RecordConfigError as exc:
            raise ReportSourceError(str(exc)) from None
        if db is not None and (db.is_symlink() or not db.is_file()):
            raise ReportSourceError(f"{store_url}: no such database file" if not db.is_symlink() else
                                    f"{store_url}: a symbolic link, not followed")
    if links := symlinks_in(run_dir):
        raise ReportSourceError(f"{run_dir}: holds symbolic links ({', '.join(links[:3])}); a run folder the graph "
                                "wrote has none, and the report follows none")
    try:
        store = open_store(store_url)
    except (sqlite3.Error, StoreDamagedError) as exc:
        raise ReportSourceError(f"{store_url}: the database cannot be opened ({exc})") from None
    try:
        if experiment_id is None:
            experiments = store.experiments()
            if not experiments:
                raise ReportSourceError(f"{run_dir}: the store holds no experiment")
            experiment_id = experiments[-1]["experiment_id"]
        data = run_data(store, experiment_id, run_dir)
    except sqlite3.Error as exc:
        raise ReportSourceError(f"{store_url}: the database is damaged and cannot be read ({exc})") from None
    except KeyError as exc:
        raise ReportSourceError(f"{store_url}: no experiment {exc} in this store") from None
    finally:
        try:
            store.close()
        except sqlite3.Error:
            pass
    return write_report(data, run_dir)
