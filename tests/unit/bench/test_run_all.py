"""The benchmark index: assembled from its parts, never edited by hand."""

import os
import shutil
import tempfile

import testtools

from bench import run_all


class TestIndex(testtools.TestCase):

    def copy_docs(self):
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp)
        shutil.copy(os.path.join(run_all.DOC_DIR, 'benchmarks.md'), tmp)
        shutil.copytree(os.path.join(run_all.DOC_DIR, 'benchmarks'),
                        os.path.join(tmp, 'benchmarks'))
        self.patch(run_all, 'DOC_DIR', tmp)
        return tmp

    def test_assembling_again_gives_the_shipped_index(self):
        # What a person wrote about a run lives in <area>.notes.md: an
        # index edited by hand would lose it to the next tox -e bench.
        tmp = self.copy_docs()
        with open(os.path.join(tmp, 'benchmarks.md')) as fh:
            shipped = fh.read()
        run_all.write_index()
        with open(os.path.join(tmp, 'benchmarks.md')) as fh:
            self.assertEqual(shipped, fh.read())

    def test_notes_follow_their_area_and_survive_a_rerun(self):
        tmp = self.copy_docs()
        with open(os.path.join(tmp, 'benchmarks', 'sim.notes.md'), 'w') as fh:
            fh.write('A note on the simulator run.\n')
        with open(os.path.join(tmp, 'benchmarks', 'sim.md'), 'w') as fh:
            fh.write('Command: `python -m bench.sim` (1 s)\n\nfigures\n')
        run_all.write_index(['- date: now'])
        with open(os.path.join(tmp, 'benchmarks.md')) as fh:
            index = fh.read()
        self.assertIn('## Environment\n\n- date: now\n', index)
        self.assertIn('## Sim\n\nCommand: `python -m bench.sim` (1 s)\n\n'
                      'figures\n\nA note on the simulator run.\n\n## ', index)
