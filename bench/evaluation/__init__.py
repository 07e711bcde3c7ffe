"""Evaluation against peers and the optimum (issues 9 and 19); all simulated.

``python -m bench.run_all evaluation`` (part of ``tox -e bench``) or
``python -m bench.evaluation`` runs it and writes ``doc/evaluation.md`` and
its plots in ``doc/images/``; what it prints is the short section
``doc/benchmarks/evaluation.md`` gets.

    python -m bench.evaluation                    # the default family too
    python -m bench.evaluation --quick            # sweep up to 1,000 hosts
    python -m bench.evaluation --family 20,4,0    # a smaller family
    python -m bench.evaluation --holdout-seeds ''  # no held-out seeds

The package is laid out by job:

* :mod:`~bench.evaluation.plan`: what runs (the rows, the variants of the
  shipped scenarios, the what-ifs);
* :mod:`~bench.evaluation.run`: running it (policies through
  ``contention.sim.run``, the decision-time sweep);
* :mod:`~bench.evaluation.family`: the family of generated clusters, and
  our rows on held-out family seeds, run in parallel processes;
* :mod:`~bench.evaluation.verdict`: pure functions over results (shares of
  the oracle's gain, the targets, the family's distributions);
* :mod:`~bench.evaluation.plots`, :mod:`~bench.evaluation.text` (cell
  formats) and :mod:`~bench.evaluation.report` with the page's template
  ``evaluation.md.tmpl``;
* :mod:`~bench.evaluation.command`: the command.

Nova and Watcher cannot share a process (``tests/nova/__init__.py``), and
this package imports Watcher, so it never imports Nova: arrivals that a
policy does not place go to the simulator's Nova-like default
(:func:`contention.sim.placement.nova_host`), described in the page.
"""


def main(argv=None):
    """``bench.run_all``'s entry: :func:`bench.evaluation.command.main`."""
    from bench.evaluation import command
    return command.main(argv)
