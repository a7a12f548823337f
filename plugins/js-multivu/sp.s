# The guest's shadow-stack pointer, read and set by the driver: each VU has its own
# shadow stack, and a VU's rewind must find the pointer where its unwind left it.
	.globaltype	__stack_pointer, i32

	.globl	mv_get_sp
	.type	mv_get_sp,@function
mv_get_sp:
	.functype	mv_get_sp () -> (i32)
	global.get	__stack_pointer
	end_function

	.globl	mv_set_sp
	.type	mv_set_sp,@function
mv_set_sp:
	.functype	mv_set_sp (i32) -> ()
	local.get	0
	global.set	__stack_pointer
	end_function
