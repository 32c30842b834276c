"""Two-node co-rotational 3-D beam (Crisfield 1990; Battini & Pacoste 2002): the beam element family.

Reference: length L0, section frame E0 (e1 along the axis, e2, e3 the section's principal
axes) held by each node i through the constant offset C_i = R_i0^T E0, so the current nodal
section frames are T_i = R_i C_i. Co-rotated frame R_r = [r1 r2 r3]:

    r1 = (x2 - x1) / l,   q = (T1 e2 + T2 e2) / 2,   r3 = r1 x q / |r1 x q|,   r2 = r3 x r1    (1)

Local deformations p_l = (u, th1, th2): u = l - L0, th_i = log(R_r^T T_i)                    (2)

Their variations with respect to the node motions (dx_i, dw_i; dw a global spin):

    du = r1 . (dx2 - dx1)
    dw_r (local) = [ (q1/q2) a2 + r3.dq / q2,  -r3.(dx2-dx1)/l,  r2.(dx2-dx1)/l ]            (3)
        with a2 = -r3.(dx2-dx1)/l, q_k = r_k . q, dq = (dw1 x T1e2 + dw2 x T2e2)/2
    dth_i = J_l^-1(th_i) R_r^T (dw_i - dw_r)                                                  (4)

collected in p_l' = Bl v (Bl: 7x12). Strain energy U = 1/2 p_l^T K_l p_l with the small-strain
Euler–Bernoulli or Timoshenko stiffness K_l (axial EA/L0, torsion GJ/L0, bending
EI/(L0(1+Φ)) [[4+Φ, 2-Φ], [2-Φ, 4+Φ]] with Φ = 12 EI / (κ G A L0²), Φ = 0 for Euler–
Bernoulli). Internal nodal forces f = Bl^T K_l p_l (exact gradient: conservative and
objective, a rigid motion leaves p_l unchanged). Damping on the deformational velocities:
f_d = Bl^T (α K_l) Bl v (stiffness-proportional, Zahariev eq. 13).

Mass (co-rotated consistent mass): the kinetic energy is that of the small-displacement
element seen from the co-rotated frame,

    T = 1/2 v_l^T M_l v_l,   v_l = R~^T v,   R~ = diag(R_r, R_r, R_r, R_r)                     (5)

with M_l the 12x12 consistent mass of cubic (Hermite) bending, linear axial and torsional
interpolation, Rayleigh rotary inertia included (Przemieniecki 1968, §11). It is exact for rigid
motions and gives the O(h^4) convergence of bending frequencies. With M = R~ M_l R~^T, the
co-rotated frame's spin W = R_r W_r v (W_r from (3)) and the spatial angular velocities of the
nodes, the Lagrange equations on SO(3) (Hamel term for spatial angular velocities) give the
inertia node forces

    f_in = M a + [W]x~ p - M [W]x~ v - (R_r W_r)^T sum_k p_k x v_k - (0, w1 x p_th1, 0, w2 x p_th2)   (6)

with p = M v and k over the four 3-blocks of v; v^T f_in = dT/dt exactly. Gravity acts on the
Hermite-interpolated centre of mass

    V_g = -m g . (x_mid + R_r d_l),   d_l = L0/12 (0, th1z - th2z, -(th1y - th2y))              (7)

and its node forces are the exact gradient (consistent load: m g/2 and the end moments
m g L0/12 of a straight element), so a freely falling element stays undeformed.
"""

from flexmb.elements.beam import exact, kernels

__all__ = ["exact", "kernels"]
