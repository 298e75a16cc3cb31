# ------------------------------------------------------------------ rank


cdef object _count_entry(object log, object alphabet, object n):
    """The log's membership record of `alphabet`, checked up to at least n keys
    (`_Log.count_in` without the count, run in C); None for shapes it leaves alone."""
    cdef object entry = log.count_entry(alphabet)
    cdef object keys = _get(log, G_KEYS)
    cdef object misses
    cdef Py_ssize_t i, end
    if (type(entry) is not T_COUNT or type(keys) is not list or type(n) is not int
            or not 0 <= n <= PyList_GET_SIZE(keys) or type(_get(entry, C_CHECKED)) is not int):
        return None
    end = n
    i = _get(entry, C_CHECKED)
    if i < end:
        misses = _get(entry, C_MISSES)
        while i < end:
            if not PySequence_Contains(alphabet, <object>PyList_GET_ITEM(keys, i)):
                misses.append(i)
            i += 1
        _put(entry, C_CHECKED, n)
    return entry


cdef object _count(object raw, object alphabet):
    """`_accounting_py._count`: members of a set field in `alphabet`, via the log's
    membership record."""
    cdef object log, n, entry, misses
    if type(raw) is not T_PREFIX:
        return _py._count(raw, alphabet)
    log = _get(raw, P_LOG_SLOT)
    n = _get(raw, P_N)
    if type(log) is not T_LOG or type(n) is not int:
        return _py._count(raw, alphabet)
    entry = _count_entry(log, alphabet, n)
    if entry is None:
        return log.count_in(alphabet, n)  # (raises what the reference raises)
    misses = _get(entry, C_MISSES)
    return _get(entry, C_BASE) + n - (bisect_left(misses, n) if misses else 0)


# ------------------------------------------------------------------ transitions


cdef object _new_state(object excl, object evid, object comp, object deps, object eb,
                       object cb, object db, object status, object disposition, object count,
                       object clock, object lease, object held):
    """`_state.make_state` in C: a ControllerState without re-running validation."""
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


cdef object _new_record(object used, object unresolved, object relation, object outcomes):
    record = PyType_GenericAlloc(T_RECORD, 0)
    _put(record, D_USED, used)
    _put(record, D_UNRESOLVED, unresolved)
    _put(record, D_RELATION, relation)
    _put(record, D_OUTCOMES, outcomes)
    return record


cdef object _new_lease(str kind_name, object kind, str obligation, object index,
                       object deadline):
    lease = PyType_GenericAlloc(T_LEASE, 0)
    _put(lease, L_ID, f"{kind_name}:{obligation}:{index}")
    _put(lease, L_KIND, kind)
    _put(lease, L_OBLIGATION, obligation)
    _put(lease, L_DEADLINE, deadline)
    return lease


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
    cdef list values = _get(log, G_VALUES)
    cdef Py_ssize_t i = n
    if i == len(keys) and len(values) == i:
        keys.append(key)
        values.append(None)
        (<dict?>_get(log, G_INDEX))[key] = n
    elif not (i < len(keys) and i < len(values) and values[i] is None
              and PyObject_RichCompareBool(keys[i], key, Py_EQ)):
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
    if key in _get(log, G_BASE_KEYS):
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
    """(action, after) exactly as `_accounting_py._evaluation_transition` computes them,
    or None when the reference module must decide (its errors are raised alike)."""
    cdef object status, index, key, prefix, lease, deps, used, ticks
    if type(config) is not T_CONFIG or not _complete(state):
        return None
    status = _get(state, S_STATUS)
    if status is not RUNNING:
        raise ValueError("A terminal controller cannot evaluate another candidate.")
    if _get(state, S_LEASE) is not None:
        raise ValueError("A pending lease must return or expire before re-evaluation.")
    index = _get(state, S_COUNT) + 1
    excl = _get(state, S_EXCL)
    evid = _get(state, S_EVID)
    comp = _get(state, S_COMP)
    deps = _get(state, S_DEPS)
    eb = _get(state, S_EB)
    cb = _get(state, S_CB)
    db = _get(state, S_DB)
    clock = _get(state, S_CLOCK)
    ticks = _get(config, Q_TICKS)
    if type(ticks) is not int:
        return None
    if verdict is V_YES:
        return A_ACCEPT, _new_state(excl, evid, comp, deps, eb, cb, db, ACCEPTED,
                                    TERMINALLY_ACCEPTED, index, clock, None, None)
    if verdict is V_NO:
        admissible = _get(config, Q_ADMISSIBLE)
        if type(payload) is not str or admissible is None:
            return None
        prefix = _prefix_of(excl)
        if (payload in _get(config, Q_FAILURES) and not _prefix_contains(prefix, payload)
                and payload in admissible):
            return A_EXCLUDE, _new_state(_added(prefix, payload), evid, comp, deps, eb, cb, db,
                                         RUNNING, None, index, clock, None, None)
        return A_HOLD, _hold(state, index, f"inadmissible or repeated failure: {payload}")
    if verdict is V_MAYBE:
        if type(payload) is T_EVIDENCE:
            if _raw(<PyObject *>payload, N_EVIDENCE) is NULL:
                return None
            key = _get(payload, N_EVIDENCE)
            if type(key) is not str:
                return None
            prefix = _prefix_of(evid)
            if (key in _get(config, Q_EVIDENCE) and not _prefix_contains(prefix, key)
                    and eb > 0):
                lease = _new_lease("evidence", LEASE_EVIDENCE, key, index, clock + ticks)
                return A_GATHER, _new_state(excl, _added(prefix, key), comp, deps, eb - 1, cb,
                                            db, RUNNING, None, index, clock, lease, None)
            return A_HOLD, _hold(state, index, f"inadmissible or repeated evidence need: {key}")
        if type(payload) is T_COMPUTE:
            if _raw(<PyObject *>payload, N_STEP) is NULL:
                return None
            key = _get(payload, N_STEP)
            if type(key) is not str:
                return None
            prefix = _prefix_of(comp)
            if (key in _get(config, Q_COMPUTE) and not _prefix_contains(prefix, key)
                    and cb > 0):
                return A_ADMIT, _new_state(excl, evid, _added(prefix, key), deps, eb, cb - 1, db,
                                           RUNNING, SOURCE_ADMISSIBLE, index, clock, None, None)
            return A_HOLD, _hold(state, index, f"inadmissible or repeated compute need: {key}")
        return A_HOLD, _hold(state, index, "finite-rank control requires a typed MAYBE payload")
    if verdict is not V_IFF or type(payload) is not str or type(arcs) is not frozenset:
        return None
    if arcs:  # arcs are validated (and rarely used) by the reference module
        return None
    admissible = _get(config, Q_ADMISSIBLE_DEPS)
    if admissible is None:
        return None
    used = _prefix_of(_get(deps, D_USED))
    if (payload in _get(config, Q_DEPENDENCY) and not _prefix_contains(used, payload)
            and payload in admissible and db > 0):
        record = _new_record(_added(used, payload), _get(deps, D_UNRESOLVED) | {payload},
                             _get(deps, D_RELATION), _get(deps, D_OUTCOMES))
        lease = _new_lease("dependency", LEASE_DEPENDENCY, payload, index, clock + ticks)
        return A_BIND, _new_state(excl, evid, comp, record, eb, cb, db - 1, RUNNING, None,
                                  index, clock, lease, None)
    return A_HOLD, _hold(state, index, f"inadmissible or repeated dependency: {payload}")


cdef object _event_hold(object state, str reason, object clock):
    """`_accounting_py._hold` of an event (clock None keeps the state's clock)."""
    return _new_state(_get(state, S_EXCL), _get(state, S_EVID), _get(state, S_COMP),
                      _get(state, S_DEPS), _get(state, S_EB), _get(state, S_CB),
                      _get(state, S_DB), HELD, _get(state, S_DISP), _get(state, S_COUNT),
                      _get(state, S_CLOCK) if clock is None else clock, None, reason)


cdef object _with_lease(object state, object lease, object clock, object disposition,
                        object record):
    """`_accounting_py._with_lease`."""
    return _new_state(_get(state, S_EXCL), _get(state, S_EVID), _get(state, S_COMP), record,
                      _get(state, S_EB), _get(state, S_CB), _get(state, S_DB),
                      _get(state, S_STATUS), disposition, _get(state, S_COUNT), clock, lease,
                      _get(state, S_HELD))


cdef object _resolved(object record, object name, object outcome):
    """`_accounting_py._resolved` for the shapes `_complete_record` admits."""
    cdef object outcomes = _get(record, D_OUTCOMES)
    cdef object used = _get(record, D_USED)
    cdef object unresolved, relation
    if type(name) is not str:
        return _py._resolved(record, name, outcome)
    outcomes = outcomes if type(outcomes) is T_PREFIX else _st.outcome_prefix(outcomes)
    if _prefix_contains(outcomes, name):
        raise ValueError("A dependency may have only one recorded outcome.")
    if not (_prefix_contains(used, name) if type(used) is T_PREFIX else name in used):
        raise ValueError("Outcomes belong only to resolved dependencies.")
    unresolved = _get(record, D_UNRESOLVED)
    if name in unresolved:
        unresolved = unresolved - {name}
    relation = _get(record, D_RELATION)
    if relation:
        relation = frozenset([arc for arc in relation if name not in arc])
    return _new_record(used, unresolved, relation, outcomes.added(name, outcome))


cdef object _event_transition(object state, object event):
    """(action, after) exactly as `_accounting_py._event_transition` computes them, or
    None when the reference module must decide (its errors are raised alike)."""
    cdef object kind, lease, clock, lease_kind
    if type(event) is not T_EVENT_DATA or not _complete(state):
        return None
    for offset in (V_KIND, V_LEASE_ID, V_OUTCOME, V_DEPENDENCY, V_CLOCK):
        if _raw(<PyObject *>event, offset) is NULL:
            return None
    kind = _get(event, V_KIND)
    if not (kind is K_EVIDENCE_RETURNED or kind is K_RESOLVED or kind is K_ADVANCE
            or kind is K_EXPIRE or kind is K_INVALIDATE):
        return None
    if _get(state, S_STATUS) is not RUNNING:
        raise ValueError("A terminal controller cannot consume another event.")
    if kind is K_INVALIDATE:
        name = _get(event, V_DEPENDENCY)
        if name is not None and _get(state, S_DEPS).outcome_for(name) is not None:
            return A_HOLD, _event_hold(state, f"resolved dependency invalidated: {name}", None)
        return A_HOLD, _event_hold(state, "dependency invalidation has no prior resolution",
                                   None)
    lease = _get(state, S_LEASE)
    if lease is None:
        return A_HOLD, _event_hold(state, "controller event has no pending lease", None)
    if kind is K_ADVANCE:
        clock = _get(event, V_CLOCK)
        if clock is not None and type(clock) is not int:
            return None  # the reference raises its TypeError (or takes an int subclass)
        if clock is None or clock <= _get(state, S_CLOCK):
            return A_HOLD, _event_hold(state, "clock must advance strictly", None)
        if clock >= _get(lease, L_DEADLINE):
            return A_EXPIRE, _event_hold(state, "lease expired", clock)
        return A_WAIT, _with_lease(state, lease, clock, _get(state, S_DISP),
                                   _get(state, S_DEPS))
    if _get(event, V_LEASE_ID) != _get(lease, L_ID):
        return A_HOLD, _event_hold(state, "controller event names the wrong lease", None)
    if kind is K_EXPIRE:
        return A_EXPIRE, _event_hold(state, "lease expired", None)
    lease_kind = _get(lease, L_KIND)
    if kind is K_EVIDENCE_RETURNED:
        if lease_kind is not LEASE_EVIDENCE:
            return A_HOLD, _event_hold(state, "evidence returned for a dependency lease", None)
        return A_REEVALUATE, _with_lease(state, None, _get(state, S_CLOCK),
                                         _get(state, S_DISP), _get(state, S_DEPS))
    outcome = _get(event, V_OUTCOME)
    if lease_kind is not LEASE_DEPENDENCY or outcome is None:
        return A_HOLD, _event_hold(state, "invalid dependency resolution event", None)
    return A_REEVALUATE, _with_lease(
        state, None, _get(state, S_CLOCK), SOURCE_ADMISSIBLE,
        _resolved(_get(state, S_DEPS), _get(lease, L_OBLIGATION), outcome),
    )
