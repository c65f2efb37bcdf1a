"""Source lines of offsets into a kernel, as compute-sanitizer reports them (gpuos_main+0x...), from a cubin
of the same source built with -lineinfo (its code is the same as without: -lineinfo adds tables only).
    python sass_lines.py IMAGE.cubin FUNCTION OFFSET...   (needs pyelftools)"""
import bisect
import io
import sys

from elftools.common.utils import struct_parse
from elftools.dwarf.lineprogram import LineProgram
from elftools.dwarf.structs import DWARFStructs
from elftools.elf.elffile import ELFFile

elf = ELFFile(open(sys.argv[1], "rb"))
fn, offsets = sys.argv[2], [int(o, 16) for o in sys.argv[3:]]
data = elf.get_section_by_name(".debug_line").data()
rela = elf.get_section_by_name(".rela.debug_line")
symtab = elf.get_section(rela["sh_link"])
seq_fn = [symtab.get_symbol(r["r_info_sym"]).name for r in sorted(rela.iter_relocations(), key=lambda r: r["r_offset"])]
stream = io.BytesIO(data)
structs = DWARFStructs(little_endian=True, dwarf_format=32, address_size=8, dwarf_version=2)
hdr = struct_parse(structs.Dwarf_lineprog_header, stream, 0)
prog = LineProgram(hdr, stream, structs, stream.tell(), hdr["unit_length"] + 4)
files = [f.name.decode() for f in hdr["file_entry"]]
seq, rows = -1, []
for e in prog.get_entries():
    if e.command is not None and e.is_extended and e.command == 2:  # DW_LNE_set_address: a new sequence
        seq += 1
    if e.state is not None and 0 <= seq < len(seq_fn) and seq_fn[seq] == fn:
        rows.append((e.state.address, files[e.state.file - 1], e.state.line))
rows.sort()
addrs = [r[0] for r in rows]
for off in offsets:
    i = bisect.bisect_right(addrs, off) - 1
    print(hex(off), "%s:%d" % rows[i][1:] if i >= 0 else "?")
