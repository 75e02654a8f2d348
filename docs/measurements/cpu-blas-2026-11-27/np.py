import numpy as np, time, sys, os
shapes=[(80,128,64),(4,256,64),(512,1024,1024)]
rng=np.random.default_rng(5)
for m,n,k in shapes:
    x=rng.standard_normal((m,k),dtype=np.float32); w=rng.standard_normal((k,n),dtype=np.float32); c=np.empty((m,n),dtype=np.float32)
    it=200 if m*n*k<1e8 else 40
    for _ in range(5): np.matmul(x,w,out=c)
    best=[]
    for rep in range(3):
        t=time.perf_counter()
        for _ in range(it): np.matmul(x,w,out=c)
        dt=time.perf_counter()-t
        best.append(2*m*n*k*it/dt/1e9)
    print(f"numpy threads={os.environ.get('OPENBLAS_NUM_THREADS')} {m}x{n}x{k}: " + " / ".join(f"{g:.1f}" for g in best)+" GFLOP/s")
