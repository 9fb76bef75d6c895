# Installed into <sys.prefix>/etc/ipython/ by `pip install` of spark-state-runbooks.
# Without this, ipykernel copies the JVM's stderr (log lines, Spark's progress bar) into whichever
# notebook cell is running, so outputs differ between Jupyter/papermill and pytest (which skips fd
# capture). The JVM output still reaches the kernel's own stderr, visible in the terminal.
c = get_config()  # noqa: F821  (provided by IPython when it loads this file)
c.IPKernelApp.capture_fd_output = False
# IPython's kernel, except that shutting down does not wait for Spark's JVM (state_runbooks/cli/kernel.py).
c.IPKernelApp.kernel_class = "state_runbooks.cli.kernel.RunbookKernel"
