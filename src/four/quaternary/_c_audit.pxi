# ------------------------------------------------------------------ audit


cdef bint _evaluation_replays(object config, object receipt, object state,
                              object prev) except -1:
    """True when an evaluation receipt that follows `state` replays exactly through the
    C transition; False hands it to the reference audit."""
    cdef PyObject *r = <PyObject *>receipt
    cdef PyObject *verdict = _raw(r, R_VERDICT)
    cdef PyObject *payload = _raw(r, R_PAYLOAD)
    cdef PyObject *claimed = _raw(r, R_DIGEST)
    cdef Py_ssize_t i
    for i in range(8):  # every slot set
        if _raw(r, R_ALL[i]) is NULL:
            return False
    if (_raw(r, R_BEFORE) != <PyObject *>state or not _is(claimed, bytes)
            or not _is(<PyObject *>prev, bytes)):
        return False
    # the shapes `_replay_payload` leaves unchanged, of the two verdicts translated
    if not ((verdict == O_NO and _is(payload, str))
            or (verdict == <PyObject *>V_YES and payload == O_NONE)):
        return False
    action = <object>_raw(r, R_ACTION)
    index = <object>_raw(r, R_INDEX)
    arcs = <object>_raw(r, R_ARCS)
    try:  # the reference audit reports these errors
        if _canonical.evaluation_digest(prev, <object>verdict, <object>payload, arcs, action,
                                        index) != <object>claimed:
            return False
        step = _evaluation_transition(config, state, <object>verdict, <object>payload, arcs)
        if step is None or (<tuple>step)[0] is not action:
            return False
        replayed = (<tuple>step)[1]
        return index == replayed.evaluation_count and <object>_raw(r, R_AFTER) == replayed
    except (TypeError, ValueError, AttributeError):
        return False
