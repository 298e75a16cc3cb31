# ------------------------------------------------------------------ transitions
#
# The two verdicts of a realistic run, a NO then a YES; other verdicts and every event
# are the reference module's.


cdef object _new_state(object excl, object evid, object comp, object deps, object eb,
                       object cb, object db, object status, object disposition, object count,
                       object clock, object lease, object held):
    """`_state.evolve` in C, every field given: a ControllerState without re-running validation."""
    state = PyType_GenericAlloc(T_STATE, 0)
    _put(state, S_EXCL, excl)
    _put(state, S_EVID, evid)
    _put(state, S_COMP, comp)
    _put(state, S_DEPS, deps)
    _put(state, S_EB, eb)
    _put(state, S_CB, cb)
    _put(state, S_DB, db)
    _put(state, S_STATUS, status)
    _put(state, S_DISP, disposition)
    _put(state, S_COUNT, count)
    _put(state, S_CLOCK, clock)
    _put(state, S_LEASE, lease)
    _put(state, S_HELD, held)
    return state


cdef object _prefix_of(object raw):
    """`_state.set_prefix` for the two shapes `_complete` admits."""
    return raw if type(raw) is T_PREFIX else _st.set_prefix(raw)


cdef object _added(object prefix, object key):
    """`_Prefix.added(key)` of a set field, in C for its two O(1) cases (the key appended
    at the log's end, or the log's next step replayed, as an audit does); a fork goes to
    the method. A 16,000-receipt replay spent a quarter of its time in the method."""
    cdef object log = _get(prefix, P_LOG_SLOT)
    cdef object n = _get(prefix, P_N)
    cdef list keys = _get(log, G_KEYS)
    cdef Py_ssize_t i = n
    if i == len(keys):
        keys.append(key)
        (<dict?>_get(log, G_INDEX))[key] = n
    elif not (i < len(keys) and PyObject_RichCompareBool(keys[i], key, Py_EQ)):
        return prefix.added(key)
    out = PyType_GenericAlloc(T_PREFIX, 0)
    _put(out, P_LOG_SLOT, log)
    _put(out, P_N, n + 1)
    _put(out, P_FROZEN, None)
    return out


cdef bint _prefix_contains(object prefix, object key) except -1:
    """`_Prefix.contains` in C."""
    cdef object log = _get(prefix, P_LOG_SLOT)
    cdef PyObject *position
    if key in _get(log, G_BASE):
        return True
    position = PyDict_GetItem(_get(log, G_INDEX), key)
    return position is not NULL and <object>position < _get(prefix, P_N)


cdef object _hold(object state, object index, str reason):
    """`_accounting_py._hold` of an evaluation."""
    return _new_state(_get(state, S_EXCL), _get(state, S_EVID), _get(state, S_COMP),
                      _get(state, S_DEPS), _get(state, S_EB), _get(state, S_CB),
                      _get(state, S_DB), HELD, None, index, _get(state, S_CLOCK), None, reason)


cdef object _evaluation_transition(object config, object state, object verdict,
                                   object payload, object arcs):
    """(action, after) exactly as `_accounting_py._evaluation_transition` computes them
    for a YES or a NO, or None when the reference module must decide (its errors are
    raised alike)."""
    cdef object index, prefix, admissible
    if type(config) is not T_CONFIG or not _complete(state):
        return None
    if _get(state, S_STATUS) is not RUNNING:
        raise ValueError("A terminal controller cannot evaluate another candidate.")
    index = _get(state, S_COUNT) + 1
    evid = _get(state, S_EVID)
    comp = _get(state, S_COMP)
    deps = _get(state, S_DEPS)
    eb = _get(state, S_EB)
    cb = _get(state, S_CB)
    db = _get(state, S_DB)
    clock = _get(state, S_CLOCK)
    if verdict is V_YES:
        return A_ACCEPT, _new_state(_get(state, S_EXCL), evid, comp, deps, eb, cb, db, ACCEPTED,
                                    TERMINALLY_ACCEPTED, index, clock, None, None)
    admissible = _get(config, Q_ADMISSIBLE)
    if verdict is not V_NO or type(payload) is not str or admissible is None:
        return None
    prefix = _prefix_of(_get(state, S_EXCL))
    if (payload in _get(config, Q_FAILURES) and not _prefix_contains(prefix, payload)
            and payload in admissible):
        return A_EXCLUDE, _new_state(_added(prefix, payload), evid, comp, deps, eb, cb, db,
                                     RUNNING, None, index, clock, None, None)
    return A_HOLD, _hold(state, index, f"inadmissible or repeated failure: {payload}")
