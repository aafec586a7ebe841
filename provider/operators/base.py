"""What every operator on a job's deployment root shares: where the root is and how to reach it."""

from __future__ import annotations

from functools import cached_property
from typing import Any, Sequence

from airflow.sdk import BaseOperator

from stategate.provider.hooks.deployment import DeploymentHook


class JobRootOperator(BaseOperator):
    """Base of the operators that act on ``<root>/<job>``.

    :param job_name: the job, a directory under ``root`` (templated)
    :param root: root of the deployment roots, any ObjectStoragePath URL (templated)
    :param conn_id: connection for an object-store root (templated; empty: none)
    :param checkpoint_root: where checkpoints and archives live when not under ``root`` (templated;
        empty: under ``root``)
    """

    template_fields: Sequence[str] = ("root", "job_name", "conn_id", "checkpoint_root")

    def __init__(self, *, job_name: str, root: str, conn_id: str | None = None,
                 checkpoint_root: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.job_name = job_name
        self.root = root
        self.conn_id = conn_id
        self.checkpoint_root = checkpoint_root

    @cached_property
    def hook(self) -> DeploymentHook:
        """The job's deployment root, built once the templated fields are rendered."""
        return DeploymentHook(self.root, self.job_name, self.conn_id, self.checkpoint_root)
