"""Where stage jobs run: threads of this process (local) or tasks of a Ray cluster (ray).

Either way a job is `worker.run_job(job)`, which starts the stage in a child process; the driver alone
commits results to the dataset and the ledger, so both executors write the same dataset.
"""

from __future__ import annotations

import concurrent.futures as cf
from typing import Any, Protocol

from miner.errors import UsageError
from miner.scale.worker import run_job

EXECUTORS = ("local", "ray")


class Executor(Protocol):
    def submit(self, job: dict[str, Any]) -> Any: ...

    def wait_any(self, handles: list[Any]) -> tuple[Any, dict[str, Any]]: ...

    def close(self) -> None: ...


class LocalExecutor:
    def __init__(self, workers: int) -> None:
        self.pool = cf.ThreadPoolExecutor(max_workers=max(1, workers))

    def submit(self, job: dict[str, Any]) -> cf.Future[dict[str, Any]]:
        return self.pool.submit(run_job, job)

    def wait_any(self, handles: list[Any]) -> tuple[Any, dict[str, Any]]:
        done, _ = cf.wait(handles, return_when=cf.FIRST_COMPLETED)
        fut = min(done, key=handles.index)  # the earliest submitted of those done: a stable order
        return fut, fut.result()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor:
    """Repos and their build batches as Ray tasks; a validate task asks for one GPU where the cluster has any.

    `address` None starts a local cluster (ray.init()); "auto" or ray://host:port joins one. The dataset
    folder must be on storage every node sees at the same path.
    """

    def __init__(self, address: str | None, workers: int) -> None:
        try:
            import ray
        except ImportError:
            raise UsageError("--executor ray needs the 'ray' package: pip install 'kernel-miner[scale]'") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            try:
                if address:
                    ray.init(address=address, log_to_driver=False)
                else:
                    ray.init(num_cpus=max(1, workers), include_dashboard=False, log_to_driver=False)
            except Exception as exc:  # noqa: BLE001 - ray raises plain Exception and ConnectionError
                where = f"join the Ray cluster at {address}" if address else "start a local Ray cluster"
                raise UsageError(f"could not {where}: {str(exc).splitlines()[0][:300]} (start one with "
                                 f"`ray start --head` and pass --ray-address; docs/scale.md)") from None
        self.remote = ray.remote(max_retries=0)(run_job)
        self._check_alive()
        self.gpus = int(ray.cluster_resources().get("GPU", 0))

    def _check_alive(self) -> None:
        """A cluster whose every node died (its GCS still answers) would leave tasks pending for ever."""
        if not any(n.get("Alive") for n in self.ray.nodes()):
            raise UsageError("the Ray cluster has no live node (see its raylet.out; docs/scale.md)")

    def submit(self, job: dict[str, Any]) -> Any:
        opts: dict[str, Any] = {"num_cpus": 1}
        if job["stage"] == "validate" and self.gpus:
            opts["num_gpus"] = 1
        return self.remote.options(**opts).remote(job)

    def wait_any(self, handles: list[Any]) -> tuple[Any, dict[str, Any]]:
        while True:
            done, _ = self.ray.wait(handles, num_returns=1, timeout=30)
            if done:
                break
            self._check_alive()
        ref = done[0]
        return ref, self.ray.get(ref)

    def close(self) -> None:
        if self.started:  # the connection (and a local cluster) this run opened; a caller's own is left alone
            self.ray.shutdown()


def make(kind: str, workers: int, address: str | None = None) -> Executor:
    if kind == "local":
        return LocalExecutor(workers)
    if kind == "ray":
        return RayExecutor(address, workers)
    raise UsageError(f"unknown executor {kind!r}: choose one of {', '.join(EXECUTORS)}")
