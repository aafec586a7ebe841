"""Provider metadata read by Airflow's ProvidersManager (``airflow providers list``)."""

from __future__ import annotations

from stategate.provider import __version__


def get_provider_info() -> dict:
    return {
        "package-name": "airflow-provider-stategate",
        "name": "stategate",
        "description": "Safe redeploys of Spark Structured Streaming window jobs: decides from the SQL "
        "change whether the checkpointed state can be reused, clears (archives) it when it cannot, "
        "and submits the job.",
        "versions": [__version__],
        "integrations": [
            {
                "integration-name": "stategate",
                "external-doc-url": "https://github.com/stategate/stategate",
                "tags": ["apache"],
            }
        ],
        "operators": [
            {
                "integration-name": "stategate",
                "python-modules": [
                    "stategate.provider.operators.gate",
                    "stategate.provider.operators.approval",
                    "stategate.provider.operators.clear_state",
                    "stategate.provider.operators.record",
                ],
            }
        ],
        "hooks": [{"integration-name": "stategate", "python-modules": ["stategate.provider.hooks.deployment"]}],
        "notifications": ["stategate.provider.notifiers.log.LogVerdictNotifier"],
    }
