"""One redeploy of a job at a time: a lock naming the DAG run that holds it.

The lock is a log of numbered entries, ``<root>/<job>/lock/<n>.json``; the newest entry says who
holds the lock (or that it was released). Every change — take, take over, release — is the
exclusive create of entry ``n + 1``: if two gates race for it, the store lets exactly one create
it and the other re-reads. Exclusive create is the one primitive every store offers atomically:
``O_EXCL`` on local and shared filesystems, a conditional write on object stores (S3's
``If-None-Match: *``, GCS's ``ifGenerationMatch=0``), both reached through fsspec's ``"xb"`` mode.
No check-then-write, no delete of someone else's lock. A store that cannot create exclusively is
refused: the gate does not run rather than race.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from contextlib import suppress
from datetime import datetime, timedelta, timezone
from typing import Any, Callable

from airflow.sdk import ObjectStoragePath

from stategate.provider.deployment.root import LOCK, JobRoot, StateGateError, fresh, read_text

Holder = dict[str, Any]
#: Entries this many below the newest are pruned by whoever takes the lock.
_KEEP = 8
#: How long an empty newest entry is taken for one being written, before it counts as unreadable.
_WRITING = 1.0


class RedeployLock:
    """``<root>/<job>/lock/``: who redeploys the job, since when."""

    def __init__(self, root: JobRoot) -> None:
        self.root = root
        self._store_checked = root.is_local

    @property
    def path(self) -> ObjectStoragePath:
        return self.root.record_path(LOCK)

    def acquire(
        self,
        owner: str,
        *,
        dag_id: str | None = None,
        wait: float = 0,
        stale_after: timedelta | None = None,
        holder_finished: Callable[[Holder], bool] | None = None,
        poll: float = 1.0,
    ) -> Holder | None:
        """Take the lock for ``owner`` (a DAG run), waiting up to ``wait`` seconds while another
        run holds it. The holder may take it again (a retried task).

        A lock is stale, and taken over, when ``holder_finished(holder)`` says the holding run has
        ended (its teardown never ran: a killed worker, a run marked failed by hand), or when it is
        older than ``stale_after``. Returns the stale holder taken over, if any."""
        self._check_store()
        deadline = time.monotonic() + wait
        entry: Holder = {"owner": owner, "dag_id": dag_id, "host": socket.gethostname(), "pid": os.getpid()}
        while True:
            number, holder = self._newest()
            if holder is not None and holder.get("owner") == owner:
                return None
            stale = holder is not None and self._is_stale(holder, number, stale_after, holder_finished)
            if holder is None or stale:
                if self._append(number + 1, entry) and self._confirm(number + 1):
                    return holder if stale else None
                continue  # another gate wrote entry number + 1 first: look again at once
            if time.monotonic() >= deadline:
                waited = f" after waiting {wait:.0f} s" if wait else ""
                raise StateGateError(
                    f"job {self.root.job_name} is being redeployed by run {holder.get('owner')!r}"
                    f"{' of DAG ' + repr(holder['dag_id']) if holder.get('dag_id') else ''} since "
                    f"{holder.get('since', '?')}{waited}. Try again when it has finished; if that run is "
                    f"gone, delete {self.path}")
            time.sleep(min(poll, max(deadline - time.monotonic(), 0.01)))

    def holder(self) -> Holder | None:
        return self._newest()[1]

    def release(self, owner: str) -> bool:
        """Release the lock if ``owner`` holds it; False if it does not (any more)."""
        while True:
            number, holder = self._newest()
            if holder is None or holder.get("owner") != owner:
                return False
            if self._append(number + 1, {"released_by": owner}):
                return True

    # ------------------------------------------------------------------ the log
    def _newest(self) -> tuple[int, Holder | None]:
        """The newest entry's number and its holder (None when released or never taken)."""
        patience = time.monotonic() + _WRITING
        while True:
            numbers = self._numbers()
            if not numbers:
                return 0, None
            try:
                text = read_text(self._entry(numbers[-1]))
            except FileNotFoundError:
                continue  # pruned or deleted by hand between the listing and the read
            if not text and time.monotonic() < patience:
                time.sleep(0.01)  # created, not yet written (a local file between open and close)
                continue
            with suppress(ValueError):
                entry = json.loads(text)
                if isinstance(entry, dict) and "released_by" in entry:
                    return numbers[-1], None
                if isinstance(entry, dict) and "owner" in entry:
                    return numbers[-1], entry
            return numbers[-1], {"owner": "?", "since": "?"}  # unreadable: held, never silently taken

    def _numbers(self) -> list[int]:
        if not fresh(self.path).exists():
            return []
        return sorted(int(p.stem) for p in self.path.iterdir() if p.suffix == ".json" and p.stem.isdigit())

    def _entry(self, number: int) -> ObjectStoragePath:
        return self.root.record_path(LOCK, f"{number:020d}.json")

    def _append(self, number: int, entry: Holder) -> bool:
        """Create entry ``number``; False if another gate created it first."""
        self.path.mkdir(parents=True, exist_ok=True)
        text = json.dumps({**entry, "since": datetime.now(timezone.utc).isoformat()})
        try:
            with self._entry(number).open("xb") as handle:
                handle.write(text.encode())
        except FileExistsError:
            return False
        except (NotImplementedError, ValueError) as error:
            raise self._refused(str(error)) from None
        return True

    def _check_store(self) -> None:
        """Refuse an object store that accepts an exclusive create but ignores it (an S3 API
        without ``If-None-Match``, as some S3-compatible servers are): create one probe twice."""
        if self._store_checked:
            return
        probe = self.path / f".probe-{uuid.uuid4().hex}"
        self.path.mkdir(parents=True, exist_ok=True)
        try:
            for attempt in (1, 2):
                with probe.open("xb") as handle:
                    handle.write(str(attempt).encode())
        except FileExistsError:
            self._store_checked = True  # the second create failed, as it must
        except (NotImplementedError, ValueError) as error:
            raise self._refused(str(error)) from None
        finally:
            with suppress(FileNotFoundError):
                probe.unlink()
        if not self._store_checked:
            raise self._refused("a second exclusive create of the same object succeeded")

    def _refused(self, why: str) -> StateGateError:
        return StateGateError(
            f"{self.path}: this store cannot create an object exclusively ({why}). Two gates could both "
            "believe they hold the redeploy lock, so the gate refuses to run here. Use a store with "
            "conditional writes (AWS S3, GCS, MinIO) or a local or shared filesystem")

    def _confirm(self, number: int) -> bool:
        """Whether the entry just created as a take is the newest, then prune the old ones.

        While a take is held nobody else writes, so a newer entry means this gate, paused since it
        read the log, recreated a number that had been pruned: the create decided nothing. Nobody
        reads below the newest entry; it is removed and the gate looks again."""
        numbers = self._numbers()
        if numbers[-1] != number:
            with suppress(FileNotFoundError):
                self._entry(number).unlink()
            return False
        for old in numbers:
            if old <= number - _KEEP:
                with suppress(FileNotFoundError):
                    self._entry(old).unlink()
        return True

    def _is_stale(self, holder: Holder, number: int, stale_after: timedelta | None,
                  holder_finished: Callable[[Holder], bool] | None) -> bool:
        if holder_finished is not None and holder.get("owner") != "?" and holder_finished(holder):
            return True
        if stale_after is None:
            return False
        with suppress(ValueError, TypeError):
            return datetime.now(timezone.utc) - datetime.fromisoformat(holder["since"]) > stale_after
        try:
            modified = self._entry(number).stat().st_mtime  # unreadable entry: judge by its file's age
        except FileNotFoundError:
            return False  # pruned meanwhile: no longer the newest, look again
        return time.time() - modified > stale_after.total_seconds()
