"""The text the PostgreSQL COPY path writes."""

from oslotest import base
import sqlalchemy as sa

from contention.store import dialects

COLUMNS = {'text': sa.Column('t', sa.String()),
           'float': sa.Column('f', sa.Double()),
           'int': sa.Column('i', sa.Integer()),
           'bool': sa.Column('b', sa.Boolean())}


class TestCopyText(base.BaseTestCase):

    def test_null_text_and_numbers(self):
        def column(kind, *values):
            return dialects._copy_column(COLUMNS[kind], values)
        self.assertEqual(['\\N', '', 'a,"b"', 'a\\tb\\nc\\\\d\\r'],
                         column('text', None, '', 'a,"b"', 'a\tb\nc\\d\r'))
        self.assertEqual(['\\N', '1.5', '1e-05'],
                         column('float', None, 1.5, 1e-05))
        self.assertEqual(['7', '\\N'], column('int', 7, None))
        self.assertEqual(['t', 'f', '\\N'], column('bool', True, False, None))

    def test_floats_round_trip(self):
        value = 0.1 + 0.2
        (text,) = dialects._copy_column(COLUMNS['float'], [value])
        self.assertEqual(value, float(text))

    def test_unicode_passes_through(self):
        self.assertEqual(['h\u00f4te \u4e3b\u673a'], dialects._copy_column(
            COLUMNS['text'], ['h\u00f4te \u4e3b\u673a']))
