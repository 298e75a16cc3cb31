"""G: invokes that turn a history into the model's reply."""

from four.invoke._scripted import ScriptedInvoke, replay_invoke, scripted_invoke

__all__ = ["ScriptedInvoke", "replay_invoke", "scripted_invoke"]
