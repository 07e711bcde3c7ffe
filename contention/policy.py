"""The interface every placement or rebalancing policy implements.

A policy is what ``contention-sim evaluate --policy NAME`` runs, loaded with
stevedore from the ``contention.sim.policies`` namespace. The Watcher
strategies and the Nova weigher are policies too, running the same core
functions they run inside OpenStack, so that the simulator compares the
code we ship and not a re-implementation of it.
"""

import abc

from contention import cluster


class Policy(abc.ABC):
    """A rebalancing and/or arrival-placement policy.

    Parameters go in ``__init__`` (keyword arguments with defaults, like a
    scikit-learn estimator) so that a policy is fully described by its name
    and parameters.
    """

    #: The stevedore entry-point name.
    name = None

    def bind(self, simulator):
        """Called once before a run.

        Only the oracle may use the simulator's ground truth; every other
        policy decides from the view alone.
        """

    def rebalance(self, view, rng):
        """Called every audit period. Return a :class:`cluster.Plan`."""
        return cluster.Plan(reason='%s does not rebalance' % self.name)

    def applied(self, plan, result, now):
        """Called after the simulator ran ``plan`` of the audit at ``now``.

        ``result`` (:class:`contention.sim.simulator.ApplyResult`) holds
        the actions that ran and those refused. A policy that remembers
        its moves records them here, as they happened.
        """

    def filter_hosts(self, instance, view, candidates):
        """The candidates an arriving instance may land on.

        Called before :meth:`place`, as Nova runs its filters before its
        weighers (the Kubernetes scheduler framework's filter stage):
        ``candidates`` are the host names that fit the instance (Nova's
        capacity filters); return those the policy's own filter passes,
        in any order. None left is Nova's NoValidHost: the instance is
        not created. The default passes every candidate.
        """
        return tuple(candidates)

    def place(self, instance, view, candidates, rng):
        """Choose a host for an arriving instance.

        ``instance`` is an :class:`cluster.InstanceView` with ``host`` empty;
        ``candidates`` are the host names that fit it and passed
        :meth:`filter_hosts` (never empty). Return a host name, or None to
        let the simulator place it, among the same candidates, as Nova's
        default weighers would.
        """
        return None
