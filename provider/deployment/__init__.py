"""A job's deployment root, one small class per concern; :class:`DeploymentHook` composes them."""

from stategate.provider.deployment.archive import Archiver
from stategate.provider.deployment.lock import RedeployLock
from stategate.provider.deployment.records import RecordStore
from stategate.provider.deployment.root import BOOKKEEPING, JobRoot, StateGateError

__all__ = ["Archiver", "BOOKKEEPING", "JobRoot", "RecordStore", "RedeployLock", "StateGateError"]
