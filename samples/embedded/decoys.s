# The same bundle in four sections of one object: in .rodata, where a program keeps data,
# and where no program keeps any: machine code, debug strings and a note.
        .section .rodata,"a",@progbits
        .balign 16
        .incbin "kernel.bundle"

        .text
        .globl decoy
        .type decoy,@function
decoy:
        ret
        .balign 16
        .incbin "kernel.bundle"

        .section .debug_str,"MS",@progbits,1
        .incbin "kernel.bundle"

        .section .note.decoy,"a",@note
        .balign 4
        .incbin "kernel.bundle"
