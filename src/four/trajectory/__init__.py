"""emit: saving and loading trajectories."""

from four.trajectory._load import Trajectory, TrajectoryError, load_trajectory
from four.trajectory._save import FORMAT, TrajectorySink, TrajectoryWriter, save_trajectory
from four.trajectory._sign import SigningError, SigningKey

__all__ = [
    "FORMAT",
    "SigningError",
    "SigningKey",
    "Trajectory",
    "TrajectoryError",
    "TrajectorySink",
    "TrajectoryWriter",
    "load_trajectory",
    "save_trajectory",
]
