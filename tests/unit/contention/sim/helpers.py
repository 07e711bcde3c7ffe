"""Small simulated machines for the simulator's tests."""

from contention.sim import hardware
from contention.sim import scenario
from contention.sim import state


def ahn_profiles():
    lib = scenario._library('ahn-spec2006', 'test')
    return {n: scenario._profile(n, s) for n, s in lib.items()}


def one_host(hw=None):
    hw = hw or hardware.HardwareClass('test', cores_per_node=8,
                                      memory_gib_per_node=32)
    return state.ClusterState([state.SimHost(
        'h0', hardware.host_model('h0', hw), hw)])


def solve(items, hw=None, t=0.0):
    """Place (profile, socket, memory socket) on one host and solve.

    Returns (normalised performance array, Solution).
    """
    cs = one_host(hw)
    for k, (prof, sock, mem) in enumerate(items):
        inst = state.SimInstance(str(k), 'vm%d' % k, prof)
        cs.add(inst)
        cs.place(inst, 0, sock, mem)
    sol, perf = cs.performance(cs.problem(t))
    return perf, sol
