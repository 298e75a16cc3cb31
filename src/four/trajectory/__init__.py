"""emit: saving and loading trajectories."""

from four.trajectory._artifacts import (
    Artifact,
    ArtifactRecorder,
    ArtifactSink,
    save_with_artifact,
)
from four.trajectory._load import Trajectory, TrajectoryError, load_trajectory
from four.trajectory._record import Detail, Info, Stats, UsageRecord, Verdict, Verdicts
from four.trajectory._save import (
    FORMAT,
    TrajectoryNotSaved,
    TrajectorySink,
    TrajectoryWriter,
    save_trajectory,
)
from four.trajectory._sign import SigningError, SigningKey

__all__ = [
    "FORMAT",
    "Artifact",
    "ArtifactRecorder",
    "ArtifactSink",
    "Detail",
    "Info",
    "SigningError",
    "SigningKey",
    "Stats",
    "Trajectory",
    "TrajectoryError",
    "TrajectoryNotSaved",
    "TrajectorySink",
    "TrajectoryWriter",
    "UsageRecord",
    "Verdict",
    "Verdicts",
    "load_trajectory",
    "save_trajectory",
    "save_with_artifact",
]
