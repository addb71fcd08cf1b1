# A hand-made CUDA fat binary (the container of NVIDIA's fatbinary tool) with one PTX entry,
# laid out as the community describes it (NVIDIA does not document it). All little-endian.
	.section	.nv_fatbin,"a",@progbits
	.p2align	3
header:
	.long	0xba55ed50		# magic (bytes 50 ed 55 ba)
	.short	1			# version
	.short	entry - header		# header size: 16
	.quad	end - entry		# size of everything after the header
entry:
	.short	1			# kind: 1 = PTX, 2 = ELF (cubin)
	.short	0x0101
	.long	payload - entry		# entry header size: 0x40
	.quad	end - payload		# payload size (a multiple of 8)
	.long	0			# compressed size: 0, not compressed
	.long	0			# options offset
	.short	0			# minor version
	.short	7			# major version
	.long	80			# sm_80
	.long	0			# name offset
	.long	0			# name length
	.quad	0x11			# flags: 0x1 64-bit, 0x10 Linux host
	.quad	0			# reserved
	.quad	0			# decompressed size (not compressed)
payload:
	.asciz	"//\n// hand-made PTX\n//\n.version 7.0\n.target sm_80\n.address_size 64\n"
	.p2align	3, 0
end:
