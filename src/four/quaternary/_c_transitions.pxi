# ------------------------------------------------------------------ transitions


cdef object _new(type cls, Py_ssize_t *offsets, tuple values):
    """A `cls` record with `values` in the slots at `offsets`, without running its
    validation (`_state.evolve` in C, every field given)."""
    cdef Py_ssize_t i
    record = PyType_GenericAlloc(cls, 0)
    for i in range(len(values)):
        _put(record, offsets[i], values[i])
    return record


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
    return _new(T_PREFIX, P_ALL, (log, n + 1, None))


cdef bint _prefix_contains(object prefix, object key) except -1:
    """`_Prefix.contains` in C."""
    cdef PyObject *position = PyDict_GetItem(_get(_get(prefix, P_LOG_SLOT), G_INDEX), key)
    return position is not NULL and <object>position < _get(prefix, P_N)


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
    clock = _get(state, S_CLOCK)
    excl = _get(state, S_EXCL)
    kept = tuple([_get(state, S_ALL[i]) for i in range(1, 7)])  # used sets, record, budgets
    if verdict is V_YES:
        return A_ACCEPT, _new(T_STATE, S_ALL, (excl, *kept, ACCEPTED, TERMINALLY_ACCEPTED, index,
                                               clock, None, None))
    admissible = _get(config, Q_ADMISSIBLE)
    if verdict is not V_NO or type(payload) is not str or admissible is None:
        return None
    prefix = excl if type(excl) is T_PREFIX else _st.set_prefix(excl)
    if (payload in _get(config, Q_FAILURES) and not _prefix_contains(prefix, payload)
            and payload in admissible):
        return A_EXCLUDE, _new(T_STATE, S_ALL, (_added(prefix, payload), *kept, RUNNING, None,
                                                index, clock, None, None))
    return A_HOLD, _new(T_STATE, S_ALL, (excl, *kept, HELD, None, index, clock, None,
                                         f"inadmissible or repeated failure: {payload}"))
