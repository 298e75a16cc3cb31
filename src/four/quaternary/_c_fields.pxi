# ------------------------------------------------------------------ slot access


cdef Py_ssize_t _offset(type cls, str name) except -1:
    descr = cls.__dict__[name]
    if isinstance(descr, _st._LazySet):
        descr = descr.slot
    if type(descr) is not types.MemberDescriptorType:
        raise ImportError(f"{cls.__name__}.{name} is not a slot")
    return (<PyMemberDescrObject *>descr).d_member.offset


cdef inline PyObject *_raw(PyObject *obj, Py_ssize_t offset) noexcept:
    """The borrowed value of a slot, NULL when it is unset."""
    return (<PyObject **>((<char *>obj) + offset))[0]


cdef inline object _get(object obj, Py_ssize_t offset):
    cdef PyObject *value = _raw(<PyObject *>obj, offset)
    if value is NULL:
        raise AttributeError("unset slot")
    return <object>value


cdef inline void _put(object obj, Py_ssize_t offset, object value):
    cdef PyObject **slot = <PyObject **>((<char *><PyObject *>obj) + offset)
    cdef PyObject *old = slot[0]
    Py_INCREF(value)
    slot[0] = <PyObject *>value
    Py_XDECREF(old)


cdef type T_STATE = ControllerState
cdef type T_RECORD = DependencyRecord
cdef type T_CONFIG = QICTConfig
cdef type T_EVAL = EvaluationReceipt
cdef type T_PREFIX = _st._Prefix
cdef type T_LOG = _st._Log

cdef Py_ssize_t S_EXCL = _offset(T_STATE, "exclusions")
cdef Py_ssize_t S_EVID = _offset(T_STATE, "used_evidence")
cdef Py_ssize_t S_COMP = _offset(T_STATE, "used_compute")
cdef Py_ssize_t S_DEPS = _offset(T_STATE, "dependencies")
cdef Py_ssize_t S_EB = _offset(T_STATE, "evidence_budget")
cdef Py_ssize_t S_CB = _offset(T_STATE, "compute_budget")
cdef Py_ssize_t S_DB = _offset(T_STATE, "dependency_budget")
cdef Py_ssize_t S_STATUS = _offset(T_STATE, "status")
cdef Py_ssize_t S_DISP = _offset(T_STATE, "candidate_disposition")
cdef Py_ssize_t S_COUNT = _offset(T_STATE, "evaluation_count")
cdef Py_ssize_t S_CLOCK = _offset(T_STATE, "clock")
cdef Py_ssize_t S_LEASE = _offset(T_STATE, "pending_lease")
cdef Py_ssize_t S_HELD = _offset(T_STATE, "held_reason")
cdef Py_ssize_t S_ALL[13]
S_ALL[:] = [_offset(T_STATE, name) for name in T_STATE.__slots__]  # in field order

cdef Py_ssize_t D_USED = _offset(T_RECORD, "used")
cdef Py_ssize_t D_UNRESOLVED = _offset(T_RECORD, "unresolved")
cdef Py_ssize_t D_RELATION = _offset(T_RECORD, "relation")
cdef Py_ssize_t D_OUTCOMES = _offset(T_RECORD, "outcomes")

cdef Py_ssize_t Q_FAILURES = _offset(T_CONFIG, "failure_alphabet")
cdef Py_ssize_t Q_ADMISSIBLE = _offset(T_CONFIG, "admissible_failures")

cdef Py_ssize_t R_BEFORE = _offset(T_EVAL, "before")
cdef Py_ssize_t R_VERDICT = _offset(T_EVAL, "verdict")
cdef Py_ssize_t R_PAYLOAD = _offset(T_EVAL, "payload")
cdef Py_ssize_t R_ARCS = _offset(T_EVAL, "dependency_arcs")
cdef Py_ssize_t R_ACTION = _offset(T_EVAL, "action")
cdef Py_ssize_t R_AFTER = _offset(T_EVAL, "after")
cdef Py_ssize_t R_INDEX = _offset(T_EVAL, "evaluation_index")
cdef Py_ssize_t R_DIGEST = _offset(T_EVAL, "digest")
cdef Py_ssize_t R_ALL[8]
R_ALL[:] = [R_BEFORE, R_VERDICT, R_PAYLOAD, R_ARCS, R_ACTION, R_AFTER, R_INDEX, R_DIGEST]

cdef Py_ssize_t P_LOG_SLOT = _offset(T_PREFIX, "log")
cdef Py_ssize_t P_N = _offset(T_PREFIX, "n")
cdef Py_ssize_t P_FROZEN = _offset(T_PREFIX, "frozen")
cdef Py_ssize_t P_ALL[3]
P_ALL[:] = [P_LOG_SLOT, P_N, P_FROZEN]
cdef Py_ssize_t G_KEYS = _offset(T_LOG, "keys")
cdef Py_ssize_t G_INDEX = _offset(T_LOG, "index")

cdef object RUNNING = ControllerStatus.RUNNING
cdef object ACCEPTED = ControllerStatus.ACCEPTED
cdef object HELD = ControllerStatus.HELD
cdef object SOURCE_ADMISSIBLE = CandidateDisposition.SOURCE_ADMISSIBLE
cdef object TERMINALLY_ACCEPTED = CandidateDisposition.TERMINALLY_ACCEPTED
cdef object V_NO = Verdict.NO
cdef object V_YES = Verdict.YES
cdef object A_EXCLUDE = ControllerAction.EXCLUDE_RETRY
cdef object A_ACCEPT = ControllerAction.EXIT_ACCEPT
cdef object A_HOLD = ControllerAction.HOLD

cdef PyObject *O_NONE = <PyObject *>None
cdef PyObject *O_RUNNING = <PyObject *>RUNNING
cdef PyObject *O_NO = <PyObject *>V_NO

# ------------------------------------------------------------------ field shapes


cdef inline bint _is(PyObject *value, type kind) noexcept:
    return value is not NULL and FOUR_TYPE(value) == <void *>kind


cdef inline bint _set_field(PyObject *value) noexcept:
    """A frozenset, or a `_Prefix` over a `_Log` (so its slots can be read as such)."""
    return _is(value, frozenset) or (_is(value, T_PREFIX) and _is(_raw(value, P_LOG_SLOT), T_LOG)
                                     and _is(_raw(value, P_N), int))


cdef bint _complete(object state) noexcept:
    """Whether every field of `state` has a shape the C transitions translate (the
    shapes the controller produces, no pending lease); the reference module decides
    every other state."""
    cdef PyObject *s = <PyObject *>state
    cdef PyObject *value
    cdef Py_ssize_t i
    if not _is(s, T_STATE) or _raw(s, S_LEASE) != O_NONE:
        return False
    for i in range(4, 7):  # the budgets
        if not _is(_raw(s, S_ALL[i]), int):
            return False
    if not (_is(_raw(s, S_COUNT), int) and _is(_raw(s, S_CLOCK), int)):
        return False
    if not (_set_field(_raw(s, S_EXCL)) and _set_field(_raw(s, S_EVID))
            and _set_field(_raw(s, S_COMP))):
        return False
    value = _raw(s, S_STATUS)
    if not (value == O_RUNNING or value == <PyObject *>ACCEPTED or value == <PyObject *>HELD):
        return False
    value = _raw(s, S_DISP)
    if not (value == O_NONE or value == <PyObject *>SOURCE_ADMISSIBLE
            or value == <PyObject *>TERMINALLY_ACCEPTED):
        return False
    value = _raw(s, S_HELD)
    if not (value == O_NONE or _is(value, str)):
        return False
    value = _raw(s, S_DEPS)
    return (_is(value, T_RECORD) and _set_field(_raw(value, D_USED))
            and _is(_raw(value, D_UNRESOLVED), frozenset)
            and _is(_raw(value, D_RELATION), frozenset) and _is(_raw(value, D_OUTCOMES), tuple))
